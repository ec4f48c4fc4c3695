// The pure core, no database: durations, backoff curves and declarative retry policies, the retry decision jobs and
// steps share, the JSON check of results and why one fails it, an errors entry as a row holds it, a job's abort switch.
import { describe, expect, it } from "vitest";
import { parseDuration, type Duration } from "../../src/core/duration.js";
import { backoffMs, defaultBackoffMs, POLICY_MAX_DELAY_MS } from "../../src/core/backoff.js";
import { describeNonJson, isJsonValue, MAX_ERROR_TEXT } from "../../src/core/json.js";
import { resolveRetryPolicy, retryDelay } from "../../src/core/retry-policy.js";
import { boundedEntry, errorEntryOf } from "../../src/core/error-entry.js";
import { JobTimeout, Retry } from "../../src/core/errors.js";
import { JobAbort } from "../../src/runtime/signal.js";

describe("durations", () => {
  it("accept milliseconds and unit strings", () => {
    expect([500, "500ms", "30s", "5m", "2h", "1d", "1.5s"].map((d) => parseDuration(d))).toEqual([500, 500, 30_000, 300_000, 7_200_000, 86_400_000, 1500]);
  });
  it("refuse anything else with a sentence naming the value", () => {
    for (const bad of ["5", "5 minutes", "-1s", -1, Number.NaN, Infinity, null, {}]) {
      expect(() => parseDuration(bad, "timeout")).toThrow(/timeout must be milliseconds or a string like/);
    }
  });
});

describe("backoff", () => {
  it("the default curve doubles from 1 s, stops at 300 s, and jitters within [50 %, 100 %]", () => {
    expect([1, 2, 3, 9, 10, 30].map((a) => defaultBackoffMs(a, () => 1))).toEqual([1000, 2000, 4000, 256_000, 300_000, 300_000]);
    expect(defaultBackoffMs(3, () => 0)).toBe(2000);
  });
  it("a policy's delay is clamped to 365 days and its failures fall back to the curve", () => {
    expect(backoffMs(1, () => "400d")).toBe(POLICY_MAX_DELAY_MS);
    expect(backoffMs(2, () => "3m")).toBe(180_000);
    expect(backoffMs(1, () => { throw new Error("x"); }, () => 1)).toBe(1000);
    expect(backoffMs(2, () => undefined as any, () => 1)).toBe(2000);
  });
  it("a policy's number out of range is clamped to [0, 365 days], not replaced; NaN falls back", () => {
    expect(backoffMs(1, () => -5000)).toBe(0);
    expect(backoffMs(1, () => Infinity)).toBe(POLICY_MAX_DELAY_MS);
    expect(backoffMs(1, () => -Infinity)).toBe(0);
    expect(backoffMs(3, () => Number.NaN, () => 1)).toBe(4000);
  });
});

describe("the JSON check of results", () => {
  it("accepts plain JSON values", () => {
    for (const ok of [null, 1, "s", true, [1, { a: [null] }], { a: { b: "c" } }, Object.create(null)]) expect(isJsonValue(ok)).toBe(true);
  });
  it("refuses Dates, Maps, class instances, BigInts, cycles and non-finite numbers", () => {
    const cycle: any = { a: 1 }; cycle.self = cycle;
    for (const bad of [new Date(), new Map(), new (class X {})(), 10n, cycle, Number.NaN, [Infinity], () => 1]) expect(isJsonValue(bad)).toBe(false);
  });
  it("allows the same object twice when it is not a cycle", () => {
    const shared = { x: 1 };
    expect(isJsonValue({ a: shared, b: shared })).toBe(true);
  });
});

describe("why a result is not JSON", () => {
  it("names the offending value and where it sits", () => {
    const cycle: any = { a: 1 }; cycle.self = cycle;
    expect(describeNonJson(cycle)).toBe("a cycle at .self (an object that contains itself)");
    expect(describeNonJson({ at: new Date() })).toBe("a Date at .at");
    expect(describeNonJson([1, { m: new Map() }])).toBe("a Map at [1].m");
    expect(describeNonJson(new (class VendorReply {})())).toBe("a VendorReply");
    expect(describeNonJson({ n: 10n })).toBe("a BigInt at .n");
    expect(describeNonJson({ x: Number.NaN })).toBe("the number NaN at .x");
    expect(describeNonJson({ ok: [1, "s", null], skipped: undefined })).toBeNull();
  });
});

describe("declarative retry policies", () => {
  it("wait grows by the backoff factor up to maxWait; jitter scales each delay into [50 %, 100 %]", () => {
    const fixed = resolveRetryPolicy({ wait: "2s" });
    expect([1, 2, 3].map((a) => fixed.backoff(a))).toEqual([2000, 2000, 2000]);
    const growing = resolveRetryPolicy({ wait: "2s", backoff: 2, maxWait: "5s" });
    expect([1, 2, 3, 4].map((a) => growing.backoff(a))).toEqual([2000, 4000, 5000, 5000]);
    expect(resolveRetryPolicy({ wait: "1s", backoff: 10 }).backoff(1000)).toBe(POLICY_MAX_DELAY_MS);
    expect(resolveRetryPolicy({ wait: "4s", jitter: true }, () => 0).backoff(1)).toBe(2000);
    expect(resolveRetryPolicy({ wait: "4s", jitter: true }, () => 1).backoff(1)).toBe(4000);
  });
  it("retryOn takes a predicate or error classes", () => {
    class VendorError extends Error {}
    const byClass = resolveRetryPolicy({ retryOn: [VendorError, RangeError] }).retryOn!;
    expect([new VendorError(), new RangeError(), new TypeError()].map(byClass)).toEqual([true, true, false]);
    expect(resolveRetryPolicy({ retryOn: (e) => e === 1 }).retryOn!(1)).toBe(true);
  });
  it("a bad field is named in the error", () => {
    class VendorError extends Error {}
    expect(() => resolveRetryPolicy({ backoff: 0.5 })).toThrow("backoff must be at least 1");
    expect(() => resolveRetryPolicy({ wait: "soon" as any })).toThrow(/wait: Invalid duration "soon"/);
    expect(() => resolveRetryPolicy({ maxAttempts: 0 })).toThrow("maxAttempts must be at least 1");
    expect(() => resolveRetryPolicy({ retryOn: VendorError as any })).toThrow("retryOn: give error classes as an array, [VendorError]");
    expect(() => resolveRetryPolicy({ tries: 3 } as any)).toThrow(/tries/);
  });
});

describe("the retry decision jobs and steps share", () => {
  const tenSeconds = (): Duration => "10s";
  it("an error is retried after the backoff's delay, and a Retry after its own, even one retryOn refuses", () => {
    const refuseAll = { backoff: tenSeconds, retryOn: () => false };
    expect(retryDelay(new Error("down"), 2, { backoff: tenSeconds, retryOn: undefined })).toBe(10_000);
    expect(retryDelay(new Error("down"), 2, refuseAll)).toBeNull();
    expect(retryDelay(new Retry("3s"), 2, refuseAll)).toBe(3000);
  });
  it("what the caller exempts is retried whatever retryOn says; a retryOn that throws retries", () => {
    const refuseAll = { backoff: tenSeconds, retryOn: () => false };
    const timeout = new JobTimeout("ran past its timeout");
    expect(retryDelay(timeout, 1, refuseAll)).toBeNull();
    expect(retryDelay(timeout, 1, refuseAll, (e) => e instanceof JobTimeout)).toBe(10_000);
    expect(retryDelay(new Error("x"), 1, { backoff: tenSeconds, retryOn: () => { throw new Error("a bad filter"); } })).toBe(10_000);
  });
  it("with maxAttempts the last attempt is not retried and its backoff is not asked; without, the attempt number never stops it", () => {
    const asked: number[] = [];
    const backoff = (attempt: number): Duration => { asked.push(attempt); return "1s"; };
    expect(retryDelay(new Error("x"), 2, { backoff, retryOn: undefined, maxAttempts: 3 })).toBe(1000);
    expect(retryDelay(new Error("x"), 3, { backoff, retryOn: undefined, maxAttempts: 3 })).toBeNull();
    expect(retryDelay(new Error("x"), 300, { backoff, retryOn: undefined })).toBe(1000);
    expect(asked).toEqual([2, 300]);
  });
});

describe("an errors entry as a row holds it", () => {
  it("cuts and cleans its texts and cleans its payload", () => {
    const long = boundedEntry(errorEntryOf(new Error("x".repeat(MAX_ERROR_TEXT + 5)), 1, new Date(0)));
    expect(long.message).toBe(`${"x".repeat(MAX_ERROR_TEXT)}… (5 more characters)`);
    const thrown = boundedEntry(errorEntryOf({ note: "a\u0000b" }, 1, new Date(0)));
    expect(thrown).toMatchObject({ kind: "NonError(object)", payload: { note: "a\ufffdb" } });
  });
});

describe("a job's abort switch (its signal is made when first asked for)", () => {
  it("a signal asked for after the abort comes aborted, with the reason", () => {
    const abort = new JobAbort();
    const reason = new Error("ran past its timeout");
    abort.abort(reason);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
  });
  it("a signal asked for before the abort fires its listeners once, with the first reason", () => {
    const abort = new JobAbort();
    const seen: unknown[] = [];
    abort.signal.addEventListener("abort", () => seen.push(abort.signal.reason));
    abort.abort("lease lost");
    abort.abort("cancelled");
    expect(seen).toEqual(["lease lost"]);
    expect([abort.aborted, abort.reason]).toEqual([true, "lease lost"]);
  });
});
