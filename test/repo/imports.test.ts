// Imports point inward (STYLE.md) and the layers have no circles (issue 41): the graph of src/ by folder is written
// down here, so an import across a new boundary is a decision someone makes on purpose; no folder cycle, no file circle.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";

// The pure core imports nothing of akadze's, SQL operations only the core, the runtime no edge, and nothing in src/
// imports functions/ or the tests. Type-only imports count for circles: a type that two files need from each other
// belongs in a third.

/** The folder (or top-level module) of src/ a file belongs to: `src/sql/claim/claim.ts` -> `sql`, `src/index.ts` -> `index`. */
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

/** The source file an import names (`./x.js` is `x.ts` or `x.tsx`), or the import as written when there is none. */
function fileOf(target: string, files: Set<string>): string {
  const base = target.replace(/\.js$/, "");
  return [`${base}.ts`, `${base}.tsx`, target].find((f) => files.has(f)) ?? target;
}

/** Each node's neighbours, sorted, from a list of edges. */
function graphOf(edges: [string, string][]): Map<string, string[]> {
  const graph = new Map<string, Set<string>>();
  for (const [from, to] of edges) {
    if (!graph.has(from)) graph.set(from, new Set());
    if (!graph.has(to)) graph.set(to, new Set());
    graph.get(from)!.add(to);
  }
  return new Map([...graph].sort(([a], [b]) => a.localeCompare(b)).map(([node, next]) => [node, [...next].sort()]));
}

/**
 * Every elementary cycle of a small graph, each from its least node back to it (`["app", "schedules", "app"]`):
 * from each node, the paths through greater nodes only that come back, so each cycle is found once.
 */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  for (const start of graph.keys()) {
    const walk = (path: string[]): void => {
      for (const next of graph.get(path[path.length - 1]) ?? []) {
        if (next === start) cycles.push([...path, start]);
        else if (next > start && !path.includes(next)) walk([...path, next]);
      }
    };
    walk([start]);
  }
  return cycles;
}

/** The strongly connected components of a graph with more than one node (Tarjan's), each sorted. */
function circlesOf(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const circles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const members = stack.splice(stack.indexOf(node));
      if (members.length > 1) circles.push(members.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return circles.sort((a, b) => a[0].localeCompare(b[0]));
}

/** The shortest way from a node back to itself inside a circle (breadth first), to show a circle as arrows. */
function loopThrough(graph: Map<string, string[]>, start: string, inside: Set<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of graph.get(node) ?? []) {
      if (!inside.has(next)) continue;
      if (next === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0])!);
        return [...path, start];
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start];
}

/** What each area may import, besides itself. */
const ALLOWED: Record<string, string[]> = {
  core: [],
  sql: ["core"],
  schema: ["core", "schema-base", "schema-beside", "schema-cluster", "schema-flow", "schema-workflow"],
  "schema-base": [],
  "schema-beside": ["schema-base"],
  "schema-cluster": ["schema-base"],
  "schema-flow": ["schema-base"],
  "schema-workflow": ["core", "schema-base"],
  db: ["core", "sql"],
  connect: ["core", "db"],
  migrate: ["core", "db", "sql"],
  app: ["core", "db", "sql"],
  schedules: ["app", "sql"],
  workflow: ["app", "core", "db", "sql"],
  control: ["app", "core", "db", "sql"],
  runtime: ["app", "core", "db", "schedules", "sql", "workflow"],
  ops: ["app", "core", "db", "runtime", "sql"],
  edge: ["app", "control", "core", "db", "ops", "runtime"],
  cli: ["app", "connect", "control", "core", "db", "dev", "edge", "migrate", "ops", "runtime"],
  dev: ["app", "connect", "core", "db", "migrate", "runtime", "sql"],
  testing: ["app", "core", "db", "migrate", "runtime", "sql"],
  otel: ["core", "workflow"],
  index: ["app", "connect", "control", "core", "db", "migrate", "ops", "runtime", "schedules", "sql", "workflow"],
};

describe("imports between src/ folders", () => {
  const imports = importsOf();

  it("finds the imports it checks", () => {
    expect(imports.length).toBeGreaterThan(300);
    expect(imports.some(([from, to]) => from === "src/sql/claim/claim.ts" && to === "src/sql/claim/fair.js")).toBe(true);
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

  it("allow only what is used, so a row shrinks when an import goes", () => {
    const used = new Set(imports.map(([from, to]) => `${areaOf(from)} -> ${areaOf(to)}`));
    const unused = Object.entries(ALLOWED).flatMap(([from, tos]) => tos.map((to) => `${from} -> ${to}`)).filter((edge) => !used.has(edge));
    expect(unused, "allowed but no longer imported: remove from ALLOWED").toEqual([]);
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

describe("imports without circles", () => {
  const imports = importsOf();
  const files = new Set(sourceFiles("src"));
  const crossing = imports.filter(([from, to]) => areaOf(from) !== areaOf(to));
  const folders = graphOf(crossing.map(([from, to]) => [areaOf(from), areaOf(to)]));
  const fileGraph = graphOf(imports.map(([from, to]) => [from, fileOf(to, files)]));

  /** A folder cycle as arrows, each step with the first import that makes it. */
  const showCycle = (cycle: string[]) => cycle.join(" -> ") + "\n" + cycle.slice(1).map((to, i) => {
    const [file, target] = crossing.find(([f, t]) => areaOf(f) === cycle[i] && areaOf(t) === to)!;
    return `    ${file} -> ${fileOf(target, files)}`;
  }).join("\n");
  /** A file circle as the shortest loop through its first file, and all its files. */
  const showCircle = (circle: string[]) => `${loopThrough(fileGraph, circle[0], new Set(circle)).join(" -> ")}\n    (${circle.join(", ")})`;

  it("finds cycles and circles where there are some", () => {
    expect(cyclesOf(graphOf([["a", "b"], ["b", "c"], ["c", "a"], ["b", "a"], ["c", "d"]]))).toEqual([["a", "b", "a"], ["a", "b", "c", "a"]]);
    expect(circlesOf(graphOf([["x", "y"], ["y", "x"], ["y", "z"], ["z", "w"], ["w", "z"], ["w", "v"]]))).toEqual([["w", "z"], ["x", "y"]]);
    expect(loopThrough(graphOf([["x", "y"], ["y", "z"], ["z", "x"], ["y", "x"]]), "x", new Set(["x", "y", "z"]))).toEqual(["x", "y", "x"]);
    expect(fileGraph.get("src/sql/claim/claim.ts")).toContain("src/sql/claim/fair.ts");
  });

  it("have no folder cycle: the folders are layers", () => {
    expect(cyclesOf(folders).map(showCycle)).toEqual([]);
  });

  it("have no file circle", () => {
    expect(circlesOf(fileGraph).map(showCircle)).toEqual([]);
  });
});
