// Imports point inward (STYLE.md): the pure core imports nothing of akadze's, SQL operations only the core,
// the runtime no edge, and nothing in src/ imports functions/ or the tests. The whole graph of today, by
// folder, is written down here, so an import across a new boundary is a decision someone makes on purpose.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";

/** The folder (or top-level module) of src/ a file belongs to: `src/sql/claim.ts` -> `sql`, `src/index.ts` -> `index`. */
function areaOf(path: string): string {
  const parts = relative("src", path).split("/");
  return parts.length > 1 ? parts[0] : parts[0].replace(/\.(js|ts|tsx)$/, "");
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** Every relative import of every file under src/ (static, re-exports and dynamic), as [from, to] paths. */
function importsOf(): [string, string][] {
  return sourceFiles("src").flatMap((file) => {
    const text = readFileSync(file, "utf8");
    return [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm)]
      .map((m) => [file, normalize(join(dirname(file), m[1]))] as [string, string]);
  });
}

/** What each area may import, besides itself. */
const ALLOWED: Record<string, string[]> = {
  core: [],
  sql: ["core"],
  schema: ["core", "schema-base", "schema-beside", "schema-flow"],
  "schema-base": [],
  "schema-beside": ["schema-base"],
  "schema-flow": ["schema-base"],
  db: ["core", "sql"],
  connect: ["core", "db"],
  migrate: ["core", "db", "sql"],
  app: ["core", "db", "schedules", "sql"],
  schedules: ["app", "core", "sql"],
  workflow: ["app", "core", "db", "sql"],
  control: ["app", "core", "db", "sql"],
  runtime: ["app", "core", "db", "schedules", "sql", "workflow"],
  ops: ["app", "core", "db", "runtime", "schedules", "sql", "workflow"],
  edge: ["app", "control", "core", "db", "ops", "runtime", "workflow"],
  cli: ["app", "connect", "control", "core", "db", "dev", "edge", "migrate", "ops", "runtime", "workflow"],
  dev: ["app", "cli", "connect", "core", "db", "migrate", "ops", "runtime", "sql"],
  testing: ["app", "core", "db", "migrate", "runtime", "sql", "workflow"],
  otel: ["core", "workflow"],
  index: ["app", "connect", "control", "core", "db", "migrate", "ops", "runtime", "schedules", "sql", "workflow"],
};

describe("imports between src/ folders", () => {
  const imports = importsOf();

  it("finds the imports it checks", () => {
    expect(imports.length).toBeGreaterThan(300);
    expect(imports.some(([from, to]) => from === "src/sql/claim.ts" && to === "src/sql/fair.js")).toBe(true);
  });

  it("never leave src/: no import of functions/, the tests, the benchmark or the scripts", () => {
    expect(imports.filter(([, to]) => !to.startsWith("src/")).map(([from, to]) => `${from} -> ${to}`)).toEqual([]);
  });

  it("point only where the graph allows, by folder", () => {
    const areas = new Set(Object.keys(ALLOWED));
    const unknown = [...new Set(imports.map(([from]) => areaOf(from)))].filter((a) => !areas.has(a));
    expect(unknown, "a new folder of src/ needs its row in ALLOWED").toEqual([]);
    const crossing = imports.filter(([from, to]) => areaOf(from) !== areaOf(to) && !ALLOWED[areaOf(from)].includes(areaOf(to)));
    expect(crossing.map(([from, to]) => `${from} -> ${to}`)).toEqual([]);
  });

  it("keep the core pure and the runtime below the edges", () => {
    const from = (area: string) => imports.filter(([f, t]) => areaOf(f) === area && areaOf(t) !== area).map(([, t]) => areaOf(t));
    expect(from("core")).toEqual([]);
    expect(new Set(from("sql"))).toEqual(new Set(["core"]));
    for (const inner of ["core", "sql", "db", "runtime", "app", "workflow", "ops"]) {
      expect(from(inner).filter((a) => ["edge", "cli", "dev", "index"].includes(a)), `${inner} imports an edge`).toEqual([]);
    }
  });
});
