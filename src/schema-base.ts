// What every file of akadze's drizzle schema shares: the Postgres schema its tables live in, and its timestamp.
import { pgSchema, timestamp } from "drizzle-orm/pg-core";

export const akadze = pgSchema("akadze");

/** A timestamp with time zone, read as a Date. */
export const tz = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });
