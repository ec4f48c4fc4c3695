// The suite runs each process's test files one after another on one module graph (vitest.config.ts: isolate
// false), so a variable a file leaves in process.env reaches the files after it (a leaked NEON_FETCH_ENDPOINT
// turned a CLI test's "pass --neon-endpoint" error into a connection attempt). A file sets its variables with
// vi.stubEnv, which this puts back once the file's own hooks have run, and fails a file that set one otherwise.
import { afterAll, expect, vi } from "vitest";

const before = { ...process.env };

// Registered before the file's own hooks, so it runs after them (vitest runs after-hooks in reverse order).
afterAll(() => {
  vi.unstubAllEnvs();
  const changed = [...new Set([...Object.keys(before), ...Object.keys(process.env)])].filter((key) => before[key] !== process.env[key]);
  expect(changed, "process.env variables this test file set without vi.stubEnv").toEqual([]);
});
