import { NameSchema, parseOrThrow } from "../core/validate.js";
import type { StepName } from "../app/step.js";

/** A step's own name, for messages (whatever was given, unchecked). @example labelOf({ name: "cool-off", formerly: ["pause"] }) // "cool-off" */
export function labelOf(step: StepName): string {
  return typeof step === "object" && step !== null ? String(step.name) : String(step);
}

/**
 * A step's name, then its former names, each checked; throws a TypeError or InvalidInput naming the fault.
 * @example stepNames({ name: "cool-off", formerly: ["pause"] }) // ["cool-off", "pause"]
 */
export function stepNames(step: StepName): string[] {
  if (typeof step === "string") return [parseOrThrow(NameSchema, step, "step name")];
  if (typeof step !== "object" || step === null || !Array.isArray(step.formerly)) {
    throw new TypeError("a step name must be a string or { name, formerly: [former names] }");
  }
  return [step.name, ...step.formerly].map((n) => parseOrThrow(NameSchema, n, "step name"));
}
