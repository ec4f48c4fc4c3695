import { query, queryJson, type Db } from "../db/query.js";
import { sessionSignedOutStatement, signOutSessionStatement } from "../sql/control/sign-out-session.js";

/**
 * Signs a dashboard session out for good: its cookie, wherever a copy of it is, no longer signs anyone in.
 * @example await signOutSession(db, session.csrf, new Date(session.expiresAt), new Date());
 */
export async function signOutSession(db: Db, session: string, expiresAt: Date, now: Date): Promise<void> {
  await query(db, signOutSessionStatement(session, expiresAt, now));
}

/** True when the dashboard session was signed out. @example if (await sessionSignedOut(db, session.csrf)) return login(); */
export async function sessionSignedOut(db: Db, session: string): Promise<boolean> {
  return (await queryJson<boolean>(db, sessionSignedOutStatement(session))) === true;
}
