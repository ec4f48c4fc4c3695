// Which Chromium the browser tests drive, so that `npm test` needs no apt step on a fresh machine:
// CHROMIUM_PATH when set; else, on linux-x64, the build @sparticuz/chromium ships inside its npm package
// (brotli-compressed), unpacked once per package version into node_modules/.cache; else the system's
// /usr/bin/chromium. The packaged build comes first so every machine runs the same, pinned Chromium.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

const SYSTEM_CHROMIUM = "/usr/bin/chromium";
const MODULES = join(import.meta.dirname, "..", "..", "node_modules");
const CACHE = join(MODULES, ".cache", "akadze-chromium");

/** Flags for a headless Chromium in a container: no sandbox (root), no /dev/shm limits, no GPU. */
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"];

/** The path of the Chromium binary to launch, unpacking the packaged one on first use. */
export async function chromiumExecutable(): Promise<string> {
  const chosen = process.env.CHROMIUM_PATH;
  if (chosen) {
    if (!existsSync(chosen)) throw new Error(`CHROMIUM_PATH=${chosen} does not exist: unset it to use the Chromium of @sparticuz/chromium`);
    return chosen;
  }
  if (process.platform === "linux" && process.arch === "x64") return packagedChromium();
  if (existsSync(SYSTEM_CHROMIUM)) return SYSTEM_CHROMIUM;
  throw new Error(`no Chromium for ${process.platform}-${process.arch}: @sparticuz/chromium ships linux-x64 only; install one (apt-get install chromium) or set CHROMIUM_PATH`);
}

async function packagedChromium(): Promise<string> {
  const version = (JSON.parse(readFileSync(join(MODULES, "@sparticuz", "chromium", "package.json"), "utf8")) as { version: string }).version;
  const target = join(CACHE, version);
  const binary = join(target, "chromium");
  if (existsSync(binary)) return binary;
  // The package unpacks into os.tmpdir() (read from TMPDIR at each call) and reuses whatever `chromium` it
  // finds there, even half written by another process: unpack into a private directory, then rename it into
  // place in one step, so a concurrent run sees either nothing or the whole build.
  mkdirSync(CACHE, { recursive: true });
  const staging = mkdtempSync(join(CACHE, `${version}.unpacking-`));
  const tmpdir = process.env.TMPDIR;
  try {
    process.env.TMPDIR = staging;
    const { default: packaged } = await import("@sparticuz/chromium");
    await packaged.executablePath();
  } finally {
    if (tmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdir;
  }
  try {
    renameSync(staging, target);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(binary)) throw error;
  }
  return binary;
}
