import type { Command } from "commander";
import { listFairWeights, MAX_FAIR_WEIGHT, setFairWeight, type FairWeight } from "../ops/fair-weights.js";
import type { CliContext } from "./context.js";
import { print, printJson, printRows } from "./output.js";
import { positiveInt } from "./parse.js";

/** `akadze fair list|set`: the tenants' weights in fair claims (docs/flow-control.md#fairness). */
export function registerFair(program: Command, ctx: CliContext): void {
  const fair = program.command("fair").description("tenants' weights in fair claims (fairKey)");

  fair.command("list").description("every tenant whose weight is not 1")
    .action((_opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      printRows<FairWeight>(ctx.json(cmd), await listFairWeights(db), "every tenant weighs 1", [
        ["KEY", (w) => w.key],
        ["WEIGHT", (w) => w.weight],
      ]);
    }));

  fair.command("set").description("how much a tenant weighs in fair claims: its share of a batch against the others' (1 is the default)")
    .argument("<key>", "the fairKey jobs are enqueued with (the tenant)")
    .argument("<weight>", `an integer from 1 to ${MAX_FAIR_WEIGHT}`, positiveInt)
    .action((key: string, weight: number, _opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const set = await setFairWeight(db, key, weight);
      if (ctx.json(cmd)) return printJson(set);
      print(`fair ${set.key}: weight ${set.weight}`);
    }));
}
