import { Name, SQL, StringChunk } from "drizzle-orm";

/** A statement as the driver takes it: its text and its parameters in order. */
export interface Rendered { sql: string; params: unknown[] }

/**
 * Shapes kept, most recently used first. A run with limits, fairness keys, expiries, retries and a worker made 13;
 * this only bounds a surprise. A shape that does not fit fails on its first different chunk, a few steps in.
 */
const SHAPES = 64;

/** A statement's shape: its tree with a HOLE for each parameter value (values are not kept). */
type Skeleton = { chunks: Skeleton[]; inline: boolean } | StringChunk | Name | Skeleton[] | typeof HOLE | object | undefined;
const HOLE = Symbol("parameter");

interface Shape { skeleton: Skeleton; sql: string }

/**
 * drizzle's rendering of a statement (`dialect.sqlToQuery`), remembered by shape. A claim or a settle is built
 * anew each time from the same templates with other values; drizzle walks the whole tree again to write the same
 * text (70-90 µs for a claim, warm, and two to three times that in an idle worker's wake-up). Here a statement whose
 * tree has the shape of one rendered before (the same template strings and nesting, only its parameter values
 * differ) takes that text, and its parameters are read off the tree in the order drizzle numbers them: a walk of a
 * few microseconds. A shape is remembered only when drizzle's own parameters were exactly the values the walk
 * reads (no inlined value, no encoder, no column-bound parameter), so a hit renders what drizzle would.
 */
export class RenderCache {
  private readonly shapes: Shape[] = [];

  constructor(private readonly render: (statement: SQL) => Rendered) {}

  query(statement: SQL): Rendered {
    const shapes = this.shapes;
    for (let i = 0; i < shapes.length; i++) {
      const params: unknown[] = [];
      if (!fits(statement, shapes[i].skeleton, params)) continue;
      const shape = shapes[i];
      if (i > 0) { shapes.splice(i, 1); shapes.unshift(shape); }
      return { sql: shape.sql, params };
    }
    const rendered = this.render(statement);
    const values: unknown[] = [];
    const skeleton = skeletonOf(statement, values);
    if (sameValues(values, rendered.params)) {
      shapes.unshift({ skeleton, sql: rendered.sql });
      if (shapes.length > SHAPES) shapes.pop();
    }
    return { sql: rendered.sql, params: rendered.params };
  }
}

/** A value drizzle sends as one parameter, whatever it is: the part of a tree its shape leaves open. */
function isValue(chunk: unknown): boolean {
  const type = typeof chunk;
  return chunk === null || type === "string" || type === "number" || type === "boolean" || type === "bigint";
}

/** `tree`'s shape; pushes its parameter values onto `params` in the order drizzle numbers them. */
function skeletonOf(tree: unknown, params: unknown[]): Skeleton {
  if (isValue(tree)) { params.push(tree); return HOLE; }
  if (tree instanceof SQL) return { chunks: tree.queryChunks.map((chunk) => skeletonOf(chunk, params)), inline: inlines(tree) };
  if (Array.isArray(tree)) return tree.map((chunk) => skeletonOf(chunk, params));
  return tree as Skeleton;
}

/**
 * Whether `tree` has the shape `skeleton`: the same nesting, template strings and identifiers (`sql.identifier`),
 * any other object the same one, a parameter value at each hole. Pushes `tree`'s parameter values onto `params`.
 */
function fits(tree: unknown, skeleton: Skeleton, params: unknown[]): boolean {
  if (skeleton === HOLE) {
    if (!isValue(tree)) return false;
    params.push(tree);
    return true;
  }
  if (tree instanceof SQL) {
    const chunks = tree.queryChunks;
    if (typeof skeleton !== "object" || !("chunks" in skeleton) || skeleton.chunks.length !== chunks.length || skeleton.inline !== inlines(tree)) return false;
    for (let i = 0; i < chunks.length; i++) if (!fits(chunks[i], skeleton.chunks[i], params)) return false;
    return true;
  }
  if (tree instanceof StringChunk) {
    if (!(skeleton instanceof StringChunk) || tree.value.length !== skeleton.value.length) return false;
    for (let i = 0; i < tree.value.length; i++) if (tree.value[i] !== skeleton.value[i]) return false;
    return true;
  }
  if (tree instanceof Name) return skeleton instanceof Name && tree.value === skeleton.value;
  if (Array.isArray(tree)) {
    if (!Array.isArray(skeleton) || tree.length !== skeleton.length) return false;
    for (let i = 0; i < tree.length; i++) if (!fits(tree[i], skeleton[i], params)) return false;
    return true;
  }
  return tree === skeleton;
}

/** drizzle's `sql.inlineParams()` flag (not in its public type). */
function inlines(tree: SQL): boolean {
  return (tree as unknown as { shouldInlineParams?: boolean }).shouldInlineParams === true;
}

function sameValues(a: unknown[], b: unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
