// Bearer-secret check for akadze's routes, with Web Crypto only so it runs on every runtime.

const encoder = new TextEncoder();

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | null | undefined): string | undefined {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "");
  return match?.[1];
}

/**
 * True when `token` equals `secret`, in time that does not depend on where they differ: both are
 * hashed first (so their lengths leak nothing either) and the digests compared without an early exit.
 * @example if (!(await secretMatches(bearerToken(req.headers.get("authorization")), env.CRON_SECRET))) ...
 */
export async function secretMatches(token: string | undefined, secret: string): Promise<boolean> {
  if (token === undefined) return false;
  const [a, b] = await Promise.all([digest(token), digest(secret)]);
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

async function digest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/**
 * Why `secret` cannot work as a bearer secret, or null: a token in `Authorization: Bearer <token>` holds no
 * whitespace, so a secret with some could never pass the check (while a sign-in form would take it).
 * @example const problem = secretProblem(env.CRON_SECRET); if (problem) throw new Error(problem);
 */
export function secretProblem(secret: string): string | null {
  return /\s/.test(secret) ? "the configured secret contains whitespace, which no Authorization: Bearer header can carry: use a secret without spaces or line breaks" : null;
}
