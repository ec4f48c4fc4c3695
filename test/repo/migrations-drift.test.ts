// What `migrate(db)` applies is src/sql/schema/migrations.generated.ts, embedded from drizzle/ by scripts/embed-migrations.ts
// (edge runtimes have no file system). This renders it again and fails when the committed file drifted from drizzle/:
// a migration's SQL edited, added or dropped without `npm run generate` (or `npx tsx scripts/embed-migrations.ts`).
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { EMBEDDED_FILE, journalOf, MIGRATIONS_DIR, renderMigrations } from "../../scripts/embed-migrations.js";

const STALE = `${EMBEDDED_FILE} is stale: run npx tsx scripts/embed-migrations.ts and commit it`;
const copies: string[] = [];
afterAll(() => copies.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

it("the embedded migrations are exactly what drizzle/ renders to", () => {
  expect(readFileSync(EMBEDDED_FILE, "utf8"), STALE).toBe(renderMigrations());
});

it("every SQL file in drizzle/ is in drizzle-kit's journal, so none is left out of the embedding", () => {
  const files = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith(".sql")).map((f) => f.slice(0, -".sql".length));
  expect(files.sort()).toEqual(journalOf().map((e) => e.tag).sort());
});

it("a migration whose SQL changed renders differently from the committed file", () => {
  const dir = mkdtempSync(join(tmpdir(), "akadze-migrations-"));
  copies.push(dir);
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  const last = journalOf(dir).at(-1)!.tag;
  writeFileSync(`${dir}/${last}.sql`, `${readFileSync(`${dir}/${last}.sql`, "utf8")}\n--> statement-breakpoint\nSELECT 1;\n`);
  expect(renderMigrations(dir)).not.toBe(readFileSync(EMBEDDED_FILE, "utf8"));
  expect(renderMigrations(dir)).toContain('"SELECT 1;"');
});
