import pg from "pg";
import { isHeartbeat, sentStatement } from "./statements.js";

/** A node-postgres pool that counts the heartbeat statements sent through it (a test waits for beats by it). */
export class BeatPool extends pg.Pool {
  beats = 0;
  override query(...args: any[]): any {
    if (isHeartbeat(sentStatement(args).text)) this.beats++;
    return (super.query as any)(...args);
  }
}
