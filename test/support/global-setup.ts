import { createTemplate, dropTemplate, ADMIN_URL } from "./postgres.js";

/** Postgres is required: an unreachable server fails the run instead of skipping suites. */
export default async function setup(): Promise<() => Promise<void>> {
  try {
    await createTemplate();
  } catch (error) {
    throw new Error(`the test suite needs PostgreSQL at ${ADMIN_URL} (start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start)`, { cause: error });
  }
  return dropTemplate;
}
