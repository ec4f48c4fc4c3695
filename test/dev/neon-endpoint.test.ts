// The local Neon endpoint speaks Neon's protocols as the real @neondatabase/serverless driver expects: HTTP /sql
// (types, array mode, transactions, NeonDbError), a WebSocket Pool through the relay, PGlite behind both, planned faults.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import pg from "pg";
import { neon, NeonDbError } from "@neondatabase/serverless";
import { PGlite } from "@electric-sql/pglite";
import { sql } from "drizzle-orm";
import { startNeonEndpoint, type NeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { configureNeonForEndpoint, neonHttpDb, neonServerlessDb, neonUrl } from "../support/neon.js";

const HOST = process.env.PGHOST_TEST ?? "127.0.0.1";
const PORT = Number(process.env.PGPORT_TEST ?? 5432);
const ADMIN_URL = `postgres://postgres@${HOST}:${PORT}/test`;
const DB = `akadze_neon_ep_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

const admin = new pg.Client({ connectionString: ADMIN_URL });
let direct: pg.Client; // straight to the scratch database, to check what really got committed
let endpoint: NeonEndpoint;

async function count(table: string, where = "true"): Promise<number> {
  const { rows } = await direct.query(`select count(*)::int as n from ${table} where ${where}`);
  return rows[0].n;
}

/** The error a promise rejects with (drizzle wraps driver errors; unwrap to the driver's). */
async function failure(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return (err as { cause?: unknown }).cause ?? err;
  }
  throw new Error("expected a rejection");
}

beforeAll(async () => {
  await admin.connect();
  await admin.query(`create database ${DB}`);
  direct = new pg.Client({ connectionString: `postgres://postgres@${HOST}:${PORT}/${DB}` });
  await direct.connect();
  await direct.query(`
    create table kinds (id int primary key, t text, j jsonb, a int[], ts timestamptz, n text, b bytea);
    create table uniq (id int primary key);
  `);
  // Backed by the admin URL: the database comes from each request's Neon-Connection-String.
  endpoint = await startNeonEndpoint({ connectionString: ADMIN_URL });
  configureNeonForEndpoint(endpoint);
});

afterAll(async () => {
  await endpoint?.close();
  await direct?.end();
  await admin.query(`drop database if exists ${DB} with (force)`);
  await admin.end();
});

describe("HTTP /sql with neon()", () => {
  it("round-trips params of several types through drizzle neon-http", async () => {
    const db = neonHttpDb(endpoint, DB);
    const ts = new Date("2024-02-29T12:34:56.789Z");
    const json = { a: 1, nested: { b: [true, null, "x"] } };
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    const inserted = await db.execute(sql`
      insert into kinds values (${7}, ${"it's text"}, ${json}, ${sql.param([1, 2, 3])}, ${ts}, ${null}, ${bytes})`);
    expect(inserted.rowCount).toBe(1);
    expect(inserted.command).toBe("INSERT");

    const { rows, fields } = await db.execute(sql`select * from kinds where id = ${7}`);
    expect(fields.map((f) => f.name)).toEqual(["id", "t", "j", "a", "ts", "n", "b"]);
    const row = rows[0] as Record<string, unknown>;
    expect(row.id).toBe(7);
    expect(row.t).toBe("it's text");
    expect(row.j).toEqual(json);
    expect(row.a).toEqual([1, 2, 3]);
    // drizzle's neon-http driver keeps timestamps as Postgres text
    expect(new Date(row.ts as string).toISOString()).toBe(ts.toISOString());
    expect(row.n).toBeNull();
    expect(Buffer.from(row.b as Uint8Array).equals(bytes)).toBe(true);
    expect(await count("kinds", "id = 7 and j->'nested'->'b'->>2 = 'x'")).toBe(1);
  });

  it("answers in array mode only when asked, with Neon's field and command shape", async () => {
    const post = (headers: Record<string, string>, body: unknown) =>
      fetch(endpoint.fetchEndpoint, {
        method: "POST",
        headers: { "Neon-Connection-String": `postgres://postgres@x/${DB}`, "Neon-Raw-Text-Output": "true", ...headers },
        body: JSON.stringify(body),
      }).then(async (res) => ({ status: res.status, body: await res.json() }));
    const query = { query: "select $1::int as x, $2::text as x, null::int as z", params: ["5", "y"] };
    const arrays = await post({ "Neon-Array-Mode": "true" }, query);
    expect(arrays.status).toBe(200);
    expect(arrays.body).toMatchObject({ command: "SELECT", rowCount: 1, rowAsArray: true, rows: [["5", "y", null]] });
    expect(arrays.body.fields[0]).toEqual({
      name: "x", dataTypeID: 23, tableID: 0, columnID: 0, dataTypeSize: 4, dataTypeModifier: -1, format: "text",
    });
    const objects = await post({}, query);
    expect(objects.body).toMatchObject({ rowAsArray: false, rows: [{ x: "y", z: null }] });
    const ddl = await post({}, { query: "create temp table tmp_shape (i int)" });
    expect(ddl.body).toMatchObject({ command: "CREATE", rowCount: null, fields: [], rows: [] });
    const many = await post({}, { query: "select 1; select 2" });
    expect(many.status).toBe(400); // one statement per query, as on Neon
    const bad = await post({ "Neon-Batch-Isolation-Level": "Sloppy" }, { queries: [] });
    expect(bad).toEqual({ status: 400, body: { message: "invalid isolation level" } });
  });

  it("runs sql.transaction() atomically and rolls back the whole batch on error", async () => {
    const client = neon(neonUrl(endpoint, DB));
    await client`insert into uniq values (1)`;
    const ok = await client.transaction([client`insert into uniq values (2)`, client`select count(*)::int as n from uniq`]);
    expect(ok[1]).toEqual([{ n: 2 }]);

    const err = await failure(
      client.transaction([client`insert into uniq values (3)`, client`insert into uniq values (1)`]),
    );
    expect(err).toBeInstanceOf(NeonDbError);
    expect(err.code).toBe("23505");
    expect(await count("uniq", "id = 3")).toBe(0); // the earlier insert is gone

    const settings = await client.transaction(
      [client`select current_setting('transaction_isolation') as iso, current_setting('transaction_read_only') as ro`],
      { isolationLevel: "Serializable", readOnly: true },
    );
    expect(settings[0]).toEqual([{ iso: "serializable", ro: "on" }]);
    const readOnly = await failure(client.transaction([client`insert into uniq values (9)`], { readOnly: true }));
    expect(readOnly.code).toBe("25006");
  });

  it("makes drizzle db.batch() one transaction", async () => {
    const db = neonHttpDb(endpoint, DB);
    await failure(db.batch([db.execute(sql`insert into uniq values (10)`), db.execute(sql`insert into uniq values (10)`)]));
    expect(await count("uniq", "id = 10")).toBe(0);
    const [, counted] = await db.batch([
      db.execute(sql`insert into uniq values (11)`),
      db.execute(sql`select count(*)::int as n from uniq where id = 11`),
    ]);
    expect(counted.rows).toEqual([{ n: 1 }]);
  });

  it("surfaces Postgres errors as NeonDbError with their fields", async () => {
    const db = neonHttpDb(endpoint, DB);
    await db.execute(sql`insert into uniq values (20)`);
    const err = await failure(db.execute(sql`insert into uniq values (${20})`));
    expect(err).toBeInstanceOf(NeonDbError);
    expect(err).toMatchObject({
      code: "23505", constraint: "uniq_pkey", table: "uniq", schema: "public", severity: "ERROR",
      detail: "Key (id)=(20) already exists.",
    });
    const syntax = await failure(db.execute(sql`selec 1`));
    expect(syntax).toMatchObject({ code: "42601", position: "1" });
  });
});

describe("WebSocket Pool through the relay", () => {
  it("runs an interactive transaction and rolls it back", async () => {
    const { db, close } = neonServerlessDb(endpoint, DB);
    try {
      await expect(
        db.transaction(async (tx) => {
          await tx.execute(sql`insert into uniq values (30)`);
          const seen = await tx.execute(sql`select count(*)::int as n from uniq where id = 30`);
          expect(seen.rows).toEqual([{ n: 1 }]);
          throw new Error("roll back, please");
        }),
      ).rejects.toThrow("roll back, please");
      expect(await count("uniq", "id = 30")).toBe(0);

      await db.transaction(async (tx) => {
        await tx.execute(sql`insert into uniq values (31)`);
      });
      expect(await count("uniq", "id = 31")).toBe(1);
      const { rows } = await db.execute(sql`select current_database() as db`);
      expect(rows).toEqual([{ db: DB }]);
    } finally {
      await close();
    }
  });
});

describe("PGlite backend", () => {
  it("answers both HTTP and WebSocket queries", async () => {
    const pglite = new PGlite();
    const local = await startNeonEndpoint({ pglite });
    try {
      expect(local.connectionString).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
      const http = neonHttpDb(local, "postgres");
      await http.execute(sql`create table notes (id int primary key, body text)`);
      await http.batch([
        http.execute(sql`insert into notes values (${1}, ${"via http"})`),
        http.execute(sql`insert into notes values (${2}, ${"also http"})`),
      ]);
      const dup = await failure(http.execute(sql`insert into notes values (1, 'again')`));
      expect(dup).toMatchObject({ code: "23505" });

      const { db, close } = neonServerlessDb(local, "postgres");
      try {
        await expect(
          db.transaction(async (tx) => {
            await tx.execute(sql`insert into notes values (3, 'rolled back')`);
            throw new Error("abort");
          }),
        ).rejects.toThrow("abort");
        await db.transaction(async (tx) => {
          await tx.execute(sql`insert into notes values (4, ${"via websocket"})`);
        });
        const ws = await db.execute(sql`select id, body from notes order by id`);
        expect(ws.rows).toEqual([
          { id: 1, body: "via http" }, { id: 2, body: "also http" }, { id: 4, body: "via websocket" },
        ]);
        // HTTP and WebSocket connections are open at once and see the same data
        const both = await http.execute(sql`select count(*)::int as n from notes`);
        expect(both.rows).toEqual([{ n: 3 }]);

        // Concurrent clients on PGlite's single session must not interleave their
        // extended-protocol messages (pglite-socket alone would: `portal "" does not exist`).
        await Promise.all([
          ...Array.from({ length: 15 }, (_, i) => http.execute(sql`insert into notes values (${100 + i}, ${"h"})`)),
          ...Array.from({ length: 15 }, (_, i) => db.execute(sql`insert into notes values (${200 + i}, ${"w"})`)),
          ...Array.from({ length: 5 }, (_, i) =>
            db.transaction(async (tx) => {
              await tx.execute(sql`insert into notes values (${300 + i}, ${"tx"})`);
              await tx.execute(sql`select pg_sleep(0.005)`);
            }),
          ),
        ]);
        const total = await http.execute(sql`select count(*)::int as n from notes`);
        expect(total.rows).toEqual([{ n: 38 }]);
      } finally {
        await close();
      }
    } finally {
      await local.close();
      await pglite.close();
    }
  });
});

describe("fault injection", () => {
  it("failRate=1 answers 503 without running anything and counts faults", async () => {
    const faulty = await startNeonEndpoint({ connectionString: ADMIN_URL, fault: { failRate: 1 } });
    try {
      const db = neonHttpDb(faulty, DB);
      const err = await failure(db.execute(sql`insert into uniq values (40)`));
      expect(String(err.message)).toContain("HTTP status 503");
      await failure(db.execute(sql`select 1`));
      expect(faulty.stats).toEqual({ requests: 2, faults: 2 });
      expect(await count("uniq", "id = 40")).toBe(0);
      // the default endpoint is unaffected
      expect((await neonHttpDb(endpoint, DB).execute(sql`select 1 as one`)).rows).toEqual([{ one: 1 }]);
    } finally {
      await faulty.close();
    }
  });

  it("dropRate=1 commits, then loses the response", async () => {
    const faulty = await startNeonEndpoint({ connectionString: ADMIN_URL, fault: { dropRate: 1, delayMs: [1, 5] } });
    try {
      const err = await failure(neonHttpDb(faulty, DB).execute(sql`insert into uniq values (41)`));
      expect(String(err.message)).toContain("Error connecting to database");
      expect(await count("uniq", "id = 41")).toBe(1);
      expect(faulty.stats.faults).toBe(1);
    } finally {
      await faulty.close();
    }
  });
});
