import { sql, type SQL } from "drizzle-orm";

/**
 * Records a dashboard session as signed out until `expiresAt` (when its cookie would have expired anyway),
 * and forgets the sign-outs that are past it: one statement.
 */
export function signOutSessionStatement(session: string, expiresAt: Date, now: Date): SQL {
  return sql`
    with forgotten as (delete from akadze.dashboard_sign_outs where expires_at <= ${now.toISOString()}::timestamptz)
    insert into akadze.dashboard_sign_outs (session, expires_at) values (${session}, ${expiresAt.toISOString()}::timestamptz)
    on conflict (session) do nothing`;
}

/** True (as `r`) when a dashboard session was signed out. */
export function sessionSignedOutStatement(session: string): SQL {
  return sql`select exists (select 1 from akadze.dashboard_sign_outs where session = ${session}) as r`;
}
