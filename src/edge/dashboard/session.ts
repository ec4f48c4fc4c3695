// The dashboard's browser session: a cookie signed with HMAC-SHA256 (Web Crypto, through Hono's signed
// cookies) that carries its expiry and a random CSRF token. Every POST must echo that token in a form
// field; a cross-site page can neither read the HttpOnly cookie nor send it (SameSite=Strict).
import { secretMatches } from "../auth.js";
import type { Context } from "hono";
import { deleteCookie, getSignedCookie, setSignedCookie } from "hono/cookie";

/** The session cookie's name. */
export const SESSION_COOKIE = "akadze_session";
/** The form field every POST carries the CSRF token in. */
export const CSRF_FIELD = "_csrf";

/** A signed-in browser: when its session ends and the token its forms must carry. */
export interface Session { expiresAt: number; csrf: string }

const encoder = new TextEncoder();

// The cookie is signed with a key derived from the bearer secret, not the secret itself, so a
// signature made here means nothing anywhere else; rotating the secret ends every session.
async function cookieKey(secret: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", encoder.encode(`akadze dashboard session\0${secret}`));
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_");
}

// Always Secure, whatever the request's Host or scheme says (a proxy may rewrite either): browsers keep a
// Secure cookie only over https, and on http://localhost and http://127.0.0.1, which they count as secure.
const SECURE = true;

/** Signs a browser in: sets the session cookie for `path` and returns the session. @example await startSession(c, secret, "/akadze/ui", 43_200_000, Date.now()); */
export async function startSession(c: Context, secret: string, path: string, ttlMs: number, now: number): Promise<Session> {
  const session: Session = { expiresAt: now + ttlMs, csrf: randomToken() };
  await setSignedCookie(c, SESSION_COOKIE, `${session.expiresAt}.${session.csrf}`, await cookieKey(secret), {
    path, httpOnly: true, sameSite: "Strict", secure: SECURE, maxAge: Math.floor(ttlMs / 1000),
  });
  return session;
}

/** The request's session, or null when the cookie is missing, forged, signed with another secret or expired. @example const session = await readSession(c, secret, Date.now()); */
export async function readSession(c: Context, secret: string, now: number): Promise<Session | null> {
  const value = await getSignedCookie(c, await cookieKey(secret), SESSION_COOKIE);
  if (!value) return null;
  const match = /^(\d{1,16})\.([\w-]{24})$/.exec(value);
  if (!match) return null;
  const expiresAt = Number(match[1]);
  return expiresAt > now ? { expiresAt, csrf: match[2] } : null;
}

/** Clears the browser's session cookie (the dashboard records the sign-out first: see signOutSession). @example endSession(c, "/akadze/ui"); */
export function endSession(c: Context, path: string): void {
  deleteCookie(c, SESSION_COOKIE, { path, httpOnly: true, sameSite: "Strict", secure: SECURE });
}

/** True when a submitted form carries the session's CSRF token (compared as the bearer secret is, in constant time). @example if (!(await csrfMatches(session, form._csrf))) return c.text("refused", 403); */
export async function csrfMatches(session: Session, submitted: unknown): Promise<boolean> {
  return typeof submitted === "string" && secretMatches(submitted, session.csrf);
}
