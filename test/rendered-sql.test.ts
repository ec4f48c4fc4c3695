// The SQL a reader could not see (issue 23, item 3): the claim and settle statements as the runtime sends them
// are committed in docs/sql/, rendered by scripts/render-sql.ts; this renders them again and fails on drift.
import { readdirSync, readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { renderStatements, RENDERED_DIR } from "../scripts/render-sql.js";

it("docs/sql holds the claim and settle statements exactly as the runtime sends them (npm run render-sql renews it)", async () => {
  const rendered = await renderStatements();
  expect(readdirSync(RENDERED_DIR).sort()).toEqual(Object.keys(rendered).sort());
  for (const [name, text] of Object.entries(rendered)) {
    const committed = readFileSync(`${RENDERED_DIR}/${name}`, "utf8").replace(/^-- Rendered by [^\n]*\n/, "");
    expect(committed, `${RENDERED_DIR}/${name} is stale: run npm run render-sql and commit it`).toBe(text);
  }
}, 60_000);
