// Creates akadze's tables and the example's `orders` table in the database at DATABASE_URL.
// Run once before the first deploy (and after upgrading akadze):
//   DATABASE_URL='postgres://user:password@host/db?sslmode=require' npx tsx examples/migrate.ts
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate, type Db } from "../src/index.js";
import { setup } from "../functions/app.js";

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write("set DATABASE_URL to the database to migrate\n");
  process.exit(1);
}
const pool = new pg.Pool({ connectionString: url });
try {
  const db = drizzle(pool) as unknown as Db;
  const { applied } = await migrate(db);
  await setup(db);
  process.stdout.write(applied.length > 0 ? `applied ${applied.join(", ")}; orders table ready\n` : "already up to date; orders table ready\n");
} finally {
  await pool.end();
}
