// The suite runs each process's test files one after another on one module graph (vitest.config.ts: isolate
// false), so a variable a file leaves in process.env reaches the files after it (a leaked NEON_FETCH_ENDPOINT
// turned a CLI test's "pass --neon-endpoint" error into a connection attempt). A file that sets one puts it
// back (vi.stubEnv, then vi.unstubAllEnvs); this fails the file that did not.
import { afterAll, expect } from "vitest";

const before = { ...process.env };

afterAll(() => {
  const changed = [...new Set([...Object.keys(before), ...Object.keys(process.env)])].filter((key) => before[key] !== process.env[key]);
  expect(changed, "process.env variables this test file changed and did not put back").toEqual([]);
});
