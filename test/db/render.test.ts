// The render cache (src/db/render.ts) gives the driver what drizzle's own rendering gives, statement after
// statement, while a statement of a shape seen before skips drizzle's walk.
import { describe, expect, it } from "vitest";
import { sql, type SQL } from "drizzle-orm";
import { PgDialect, integer, pgTable } from "drizzle-orm/pg-core";
import { RenderCache } from "../../src/db/render.js";
import { claimJobsStatement, type ClaimParams } from "../../src/sql/claim/claim.js";
import { timestamp } from "../../src/sql/time.js";

const dialect = new PgDialect();

/** A cache over drizzle's rendering that counts the renders it asked for. */
function counted() {
  let renders = 0;
  const cache = new RenderCache((statement) => { renders++; return dialect.sqlToQuery(statement); });
  return { cache, renders: () => renders };
}

/** What the driver is sent: the text and the parameters (drizzle's typings are not sent). */
function sent(statement: SQL) {
  const { sql: text, params } = dialect.sqlToQuery(statement);
  return { sql: text, params };
}

function claim(p: Partial<ClaimParams>): SQL {
  return claimJobsStatement({
    owner: "w#1", now: timestamp(null), leaseMs: 30_000, batchSize: 40, tasks: ["a"], queues: null, startCount: 10,
    limits: false, fair: false, fairSubKeys: false, maxBytes: null, traced: false, ...p,
  } as ClaimParams);
}

describe("RenderCache", () => {
  it("renders each claim as drizzle does, and renders a shape once", () => {
    const { cache, renders } = counted();
    const claims = [
      claim({}), claim({ owner: "w#2", leaseMs: 5_000 }), claim({ tasks: ["a", "b"], startCount: 3 }),
      claim({ queues: ["mail"] }), claim({ queues: ["mail", "default"], owner: "w#3" }),
      claim({ batchSize: 500 }), claim({ batchSize: 40, owner: "w#4" }),
      claim({ limits: true }), claim({ fair: true }), claim({ fair: true, owner: "w#5" }),
      claim({ now: timestamp(new Date("2026-01-02T03:04:05Z")) }), claim({ now: timestamp(new Date("2026-02-03T04:05:06Z")) }),
    ];
    for (const statement of claims) expect(cache.query(statement)).toEqual(sent(statement));
    // Shapes: plain (4 claims), one queue (an equality), two queues (a list), batch 500 (its lock limit is in the
    // text), limits, fair (2 claims), a clock (2 claims).
    expect(renders()).toBe(7);
  });

  it("tells apart what changes the text: a missing value, a list's length, raw text, an inlined value", () => {
    const { cache } = counted();
    const users = pgTable("users", { id: integer("id") });
    const statements = [
      sql`select ${1}, ${"x"}`, sql`select ${undefined}, ${"x"}`, sql`select ${null}, ${"y"}`,
      sql`select * from t where id in ${[1, 2]}`, sql`select * from t where id in ${[1, 2, 3]}`, sql`select * from t where id in ${[4, 5, 6]}`,
      sql`select ${sql.raw("64")}`, sql`select ${sql.raw("128")}`,
      sql`select ${"a"}`.inlineParams(), sql`select ${"b"}`.inlineParams(),
      sql`select ${sql.identifier("x")}, ${1}`, sql`select ${sql.identifier("y")}, ${2}`,
      sql`select ${users.id} from ${users} where ${users.id} = ${sql.param(7, users.id)}`,
      sql`select ${users.id} from ${users} where ${users.id} = ${sql.param(8, users.id)}`,
      sql`select ${new Date("2026-01-01T00:00:00Z")}::timestamptz`, sql`select ${new Date("2026-01-02T00:00:00Z")}::timestamptz`,
      sql`select ${true}, ${10n}`, sql`select ${false}, ${11n}`,
    ];
    for (const statement of statements) expect(cache.query(statement)).toEqual(sent(statement));
  });
});
