import type { Command } from "commander";
import type { Db } from "../db/query.js";
import { connect, type Connection } from "./connect.js";

/** What every command group gets from the program. */
export interface CliContext {
  /** Opens the database from the global options, runs `fn`, and closes it whatever happens. */
  withDb<T>(cmd: Command, fn: (db: Db, connection: Connection) => Promise<T>): Promise<T>;
  /** True when --json was given. */
  json(cmd: Command): boolean;
}

/**
 * The context the `akadze` program hands its command groups, and where the last command connected
 * (for error messages).
 * @example const { ctx, where } = createCliContext(); registerJobs(program, ctx);
 */
export function createCliContext(): { ctx: CliContext; where: () => string | undefined } {
  let where: string | undefined;
  const ctx: CliContext = {
    async withDb(cmd, fn) {
      const globals = cmd.optsWithGlobals();
      const connection = await connect({ database: globals.database, http: globals.http, neonEndpoint: globals.neonEndpoint });
      where = connection.where;
      try {
        return await fn(connection.db, connection);
      } finally {
        await connection.close().catch(() => {});
      }
    },
    json: (cmd) => Boolean(cmd.optsWithGlobals().json),
  };
  return { ctx, where: () => where };
}
