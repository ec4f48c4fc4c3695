// An application module as a user writes it: a sign-up workflow with a mail client passed in, so a test
// can give it a fake one. examples/onboarding.test.ts tests it with akadze/testing.
import * as v from "valibot";
import { createApp } from "akadze";

/** What the workflow needs of a mail service. */
export interface Mailer {
  send(to: string, text: string): Promise<void>;
}

/** The app and its workflow: welcome mail, wait for the address to be verified, a day later some tips. */
export function createOnboarding(mail: Mailer) {
  const app = createApp();
  const onboard = app.workflow("user.onboard", {
    args: v.object({ userId: v.number(), email: v.string() }),
    maxAttempts: 4,
    backoff: () => "2m", // a failed step is tried again two minutes later
  }, async ({ userId, email }, step) => {
    await step.run("welcome", () => mail.send(email, "Welcome!"));
    const verified = await step.waitForEvent<{ userId: number }>("verified", { event: "user.verified", match: { userId }, timeout: "3d" });
    if (verified === null) {
      await step.run("reminder", () => mail.send(email, "Please verify your address"));
      return "unverified";
    }
    await step.sleep("settle-in", "1d");
    await step.run("tips", () => mail.send(email, "Three tips for your first week"));
    return "onboarded";
  });
  return { app, onboard };
}
