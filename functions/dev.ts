// What `akadze dev` serves (the example application) and the requests `npm start` sends it.
import { sql } from "drizzle-orm";
import { queryJson } from "../src/db/query.js";
import type { DemoScenario } from "../src/dev/demo.js";
import { akadzeDashboard } from "../src/edge/dashboard/index.js";
import { createWeb } from "./app.js";

export { app, setup } from "./app.js";

/** The example app with the dashboard at /akadze/ui (sign in with the dev secret); a tick fans out as deployed. */
export const web = createWeb({ dashboard: akadzeDashboard(), fanOut: true });

const order = (reference: string, item: string, payment: "ok" | "flaky" | "declined") =>
  ({ path: "/orders", body: { reference, item, quantity: 1, payment } });

export const demo: DemoScenario = {
  requests: [
    order("A-100", "teapot", "ok"),        // charge -> ship (snoozes until the warehouse is ready) -> notify
    order("A-101", "kettle", "ok"),
    order("A-102", "mug", "flaky"),        // charge throws Retry("2s") once, then the chain goes on
    order("A-103", "saucer", "declined"),  // charge throws Fail: failed at once, the order stays placed
    order("A-104", "spoon", "ok"),
    order("A-100", "teapot", "ok"),        // the same reference again: refused with 409, nothing written
  ],
  async report(db) {
    const byStatus = await queryJson<Record<string, number> | null>(db,
      sql`select jsonb_object_agg(status, n) as r from (select status, count(*)::int as n from orders group by status) t`);
    return [`Orders: ${Object.entries(byStatus ?? {}).map(([status, n]) => `${n} ${status}`).join(", ")}.`];
  },
};
