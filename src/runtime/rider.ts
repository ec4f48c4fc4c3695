// The interface of what rides on a claim (riders.ts lists them).
import type { ClaimCore, RideSql } from "../sql/claim/claim.js";
import type { ClaimResult } from "../sql/claim/claim-answer.js";

/** What a rider is told of the claim it may ride on. */
export interface RideContext {
  /** The engine's first claim (until one was answered). */
  first: boolean;
  /** The most jobs the claim asks for. */
  batchSize: number;
  /** A claim that asks for more is followed by another at once (the engine drains: EngineContext.drains). */
  drains: boolean;
  core: ClaimCore;
}

/** One rider's part in one claim: its SQL, and what it does with the claim's answer. */
export interface Ride extends RideSql {
  /**
   * The claim's answer, its report under the names this ride gave. `count` is told of each statement the rider
   * sends beside the claims. True: the next claim should come at once (this rider has more to carry).
   */
  answered?(answer: ClaimResult, count: () => void): boolean | void;
}

export interface ClaimRider {
  /** Its name, as in the table above (docs/sql/riders/<name>.sql). */
  readonly name: string;
  /** What it adds to this claim; null: nothing this time. */
  ride(claim: RideContext): Ride | null;
  /** Resolves when what it started beside the claims (a maintenance statement, an ANALYZE) has ended. */
  finished?(): Promise<void>;
}
