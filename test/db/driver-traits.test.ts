// The driver's traits, decided once per database object (issue 23, item 2): every driver of the matrix, as
// the engine, the settler and the worker's wake-ups read them.
import { expect, it } from "vitest";
import { traitsOf, MAX_CLAIM_BYTES, MAX_SETTLE_BYTES } from "../../src/db/traits.js";
import { forEachDriver } from "../support/drivers.js";

const EXPECTED = {
  "node-postgres": { http: false, listen: "pool", poolMax: 10 },
  "neon-http": { http: true, listen: null, poolMax: null },
  "neon-serverless": { http: false, listen: "pool" },
  pglite: { http: false, listen: "client", poolMax: null },
} as const;

forEachDriver((h, name) => {
  it("names the driver, caps only what crosses HTTP, and says how a worker can LISTEN", () => {
    const traits = traitsOf(h().db);
    expect(traits).toMatchObject({ name, ...EXPECTED[name] });
    expect(traits.maxClaimBytes).toBe(traits.http ? MAX_CLAIM_BYTES : null);
    expect(traits.maxSettleBytes).toBe(traits.http ? MAX_SETTLE_BYTES : null);
    // Decided once: the same object every time, and frozen.
    expect(traitsOf(h().db)).toBe(traits);
    expect(Object.isFrozen(traits)).toBe(true);
  });

  it("a transaction has its database's traits", async () => {
    if (name === "neon-http") return; // no interactive transactions over HTTP
    const outer = traitsOf(h().db);
    await h().db.transaction(async (tx) => {
      expect(traitsOf(tx as never)).toMatchObject({ name: outer.name, http: outer.http, maxClaimBytes: outer.maxClaimBytes });
    });
  });
});
