// A user's vitest file for examples/onboarding.ts, written with akadze/testing: each test gets its own
// in-memory PGlite with akadze's schema, and moves time by hand instead of waiting for it.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getJob } from "akadze";
import { testApp, type TestApp } from "akadze/testing";
import { createOnboarding } from "./onboarding.js";

/** A fake mail service: records what was sent, and fails its next `failures` sends. */
const mail = {
  sent: [] as string[],
  failures: 0,
  async send(to: string, text: string) {
    if (this.failures > 0) {
      this.failures--;
      throw new Error("mail server unavailable");
    }
    this.sent.push(`${to}: ${text}`);
  },
};
const { app, onboard } = createOnboarding(mail);

describe("onboarding", () => {
  let t: TestApp;
  beforeEach(async () => {
    mail.sent = [];
    mail.failures = 0;
    t = await testApp(app);
  });
  afterEach(() => t.close());

  it("welcomes, waits for the verification, and sends tips a day later", async () => {
    await onboard.using(t.db).enqueue({ userId: 7, email: "ada@example.com" });
    await t.drain();
    expect(mail.sent).toEqual(["ada@example.com: Welcome!"]);

    // The verification arrives: the waiting step takes it, then the workflow sleeps for a day.
    expect(await t.sendEvent("user.verified", { userId: 7 })).toMatchObject({ delivered: 1 });
    await t.drain();
    t.clock.advance("23h");
    await t.drain();
    expect(mail.sent).toHaveLength(1); // still asleep

    t.clock.advance("1h");
    await t.drain();
    expect(mail.sent).toEqual(["ada@example.com: Welcome!", "ada@example.com: Three tips for your first week"]);
    const [job] = await t.enqueued(onboard); // typed: job.args.email is a string
    expect(job).toMatchObject({ state: "succeeded", result: "onboarded", args: { email: "ada@example.com" } });
  });

  it("tries the welcome mail again after its two-minute backoff while the mail server is down", async () => {
    mail.failures = 2;
    const id = await onboard.using(t.db).enqueue({ userId: 8, email: "bob@example.com" });
    expect((await t.drain()).problems).toEqual([]); // a step's failure parks the run; the job itself does not fail
    expect(mail.sent).toEqual([]);

    t.clock.advance("1m");
    await t.drain();
    expect(mail.sent).toEqual([]); // the backoff has not passed
    t.clock.advance("1m");
    await t.drain(); // the second try fails too
    t.clock.advance("2m");
    await t.drain();
    expect(mail.sent).toEqual(["bob@example.com: Welcome!"]);
    const welcome = (await getJob(t.db, id))?.steps?.find((s) => s.name === "welcome");
    expect(welcome).toMatchObject({ state: "done", attempts: 3 });
  });

  it("reminds a user who never verifies, once the three days are over", async () => {
    await onboard.using(t.db).enqueue({ userId: 9, email: "eve@example.com" });
    const summary = await t.runUntilIdle(); // moves the clock to the wait's timeout
    expect(summary.advancedMs).toBeGreaterThan(3 * 86_400_000 - 60_000);
    expect(mail.sent).toEqual(["eve@example.com: Welcome!", "eve@example.com: Please verify your address"]);
    expect((await t.enqueued(onboard, { state: "succeeded" }))[0].result).toBe("unverified");
  });
});
