// What a worker says of its errors when the app gives no onError (runWorker's default, and the CLI's worker):
// each new line at once, a line it said last again only after 30 s, whatever the errors' pace.
import { expect, it } from "vitest";
import { throttledErrorReport } from "../../src/runtime/error-report.js";
import { errorMessage } from "../../src/core/error-causes.js";

it("says a repeated error once, then again every 30 s while it lasts, and a new one at once", () => {
  let clock = 0;
  const lines: string[] = [];
  const report = throttledErrorReport((e) => String((e as Error).message), (line) => lines.push(line), { now: () => clock });
  const down = new Error("connect ECONNREFUSED");
  // An outage: every lane and poll fails, every 2 s.
  for (; clock < 61_000; clock += 2_000) report(down);
  expect(lines).toEqual(["connect ECONNREFUSED", "connect ECONNREFUSED", "connect ECONNREFUSED"]);
  report(new Error("relation \"akadze.jobs\" does not exist"));
  report(down);
  expect(lines.slice(3)).toEqual(["relation \"akadze.jobs\" does not exist", "connect ECONNREFUSED"]);
});

it("names the database's own message when a cause carries its code, and never a failed query's values", () => {
  const pgError = Object.assign(new Error("deadlock detected"), { code: "40P01" });
  expect(errorMessage(new Error("Failed query: update ...", { cause: pgError }))).toBe("deadlock detected");
  expect(errorMessage("a string")).toBe("a string");
  // A failed query without a coded cause: its SQL, not the app's values.
  const failed = Object.assign(new Error("Failed query: select * from users where email = $1\nparams: someone@example.com"),
    { query: "select * from users where email = $1", params: ["someone@example.com"] });
  expect(errorMessage(failed)).toBe("Failed query: select * from users where email = $1");
});
