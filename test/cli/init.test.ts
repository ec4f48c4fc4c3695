// `akadze init` in an existing project, and how `akadze dev` / `akadze worker` find the app module
// (test/package/newcomer-path.test.ts runs the scaffold for real, from an installed tarball).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { initProject, nextSteps } from "../../src/cli/init.js";
import { createApp } from "../../src/index.js";
import { NUDGE_BUDGET } from "../../src/edge/nudge.js";
import { tasksOverBudget } from "../../src/ops/invocation-log.js";
import { findAppModule, importModule } from "../../src/cli/load-module.js";

let project: string;
beforeEach(() => { project = mkdtempSync(join(tmpdir(), "akadze-init-")); });
afterEach(() => { rmSync(project, { recursive: true, force: true }); });

const read = (file: string) => readFileSync(join(project, file), "utf8");

describe("akadze init", () => {
  it("keeps the project's own files and says what to add to them", () => {
    writeFileSync(join(project, "package.json"), '{\n    "name": "My Shop",\n    "type": "module"\n}\n');
    writeFileSync(join(project, "wrangler.toml"), 'name = "shop"\n');
    writeFileSync(join(project, ".gitignore"), "node_modules\n.dev.vars");
    const steps = initProject(project, { dir: "src/jobs" });
    expect(steps).toEqual([
      { file: "src/jobs/app.ts", action: "created" },
      { file: "src/jobs/cloudflare.ts", action: "created" },
      { file: "api/akadze.ts", action: "created" },
      { file: "wrangler.toml", action: "kept", note: expect.stringContaining('main = "src/jobs/cloudflare.ts"') },
      { file: "vercel.json", action: "created" },
      { file: ".dev.vars", action: "created" },
      { file: "tsconfig.json", action: "created" },
      { file: ".gitignore", action: "updated", note: "ignores .akadze/" },
      { file: "package.json", action: "updated", note: expect.stringContaining("./src/jobs/app.ts") },
    ]);
    expect(read("wrangler.toml")).toBe('name = "shop"\n');
    expect(read(".gitignore")).toBe("node_modules\n.dev.vars\n.akadze/\n");
    expect(read("package.json")).toBe('{\n    "name": "My Shop",\n    "type": "module",\n    "akadze": {\n        "app": "./src/jobs/app.ts"\n    }\n}\n');
    expect(read("api/akadze.ts")).toContain('from "../src/jobs/app.js"');
    expect(read("src/jobs/app.ts")).toContain('timeout: "5s"');
  });

  it("the scaffold's comment gives the longest timeout a nudge and the cron run, and its task fits both", async () => {
    writeFileSync(join(project, "package.json"), '{ "type": "module" }');
    initProject(project);
    const module = read("akadze/app.ts");
    expect(module).toContain("the nudge in POST /greet\n  // runs 10s (so at most 9 s), the /akadze/work route and the cron 25s (at most 24 s)");
    const app = createApp();
    app.task("greet", { timeout: /timeout: "(\w+)"/.exec(module)![1] as "5s" }, async () => {});
    app.task("too.long", { timeout: "10s" }, async () => {});
    expect(tasksOverBudget(app, NUDGE_BUDGET)).toEqual(["too.long"]);
  });

  it("writes a wrangler.toml that minifies and runs the cron every minute", () => {
    writeFileSync(join(project, "package.json"), '{ "name": "@acme/shop" }');
    initProject(project);
    expect(read("wrangler.toml")).toMatch(/^name = "-acme-shop"$[\s\S]*^main = "akadze\/cloudflare\.ts"$[\s\S]*^minify = true$[\s\S]*^crons = \["\* \* \* \* \*"\]$/m);
    expect(read(".dev.vars")).toMatch(/^NEON_FETCH_ENDPOINT=http:\/\/127\.0\.0\.1:4001\/sql$/m);
  });

  it("makes a CommonJS package (npm init -y) an ES module package, and writes a NodeNext tsconfig", () => {
    writeFileSync(join(project, "package.json"), '{\n  "name": "shop",\n  "main": "index.js",\n  "type": "commonjs"\n}\n');
    const steps = initProject(project);
    expect(steps.filter((s) => s.file === "package.json")).toEqual([{ file: "package.json", action: "updated",
      note: '"akadze": { "app": "./akadze/app.ts" }, for akadze dev and akadze worker; "type": "module" (was "type": "commonjs"): akadze and the scaffolded .ts files are ES modules' }]);
    expect(JSON.parse(read("package.json"))).toEqual({ name: "shop", main: "index.js", type: "module", akadze: { app: "./akadze/app.ts" } });
    expect(JSON.parse(read("tsconfig.json")).compilerOptions).toMatchObject({ module: "NodeNext", moduleResolution: "NodeNext", strict: true });
  });

  it("names Node's types in the tsconfig (TypeScript 7 includes none unless named) and says what to install", () => {
    writeFileSync(join(project, "package.json"), '{ "type": "module" }');
    initProject(project);
    expect(JSON.parse(read("tsconfig.json")).compilerOptions.types).toEqual(["node"]);
    const next = nextSteps(project).join("\n");
    expect(next).toMatch(/^  npm install hono valibot +# the app module imports them$/m);
    expect(next).toMatch(/^  npm install -D typescript @types\/node tsx +# tsc; Node's types, which the tsconfig names \(TypeScript 7 includes none unless named\); akadze dev/m);
    expect(next).toMatch(/^  npx tsc +# .*else npx fetches an unrelated package named tsc/m);

    writeFileSync(join(project, "package.json"), JSON.stringify({ dependencies: { hono: "^4", valibot: "^1" }, devDependencies: { typescript: "^7", tsx: "^4" } }));
    expect(nextSteps(project).filter((line) => line.includes("npm install"))).toEqual([expect.stringMatching(/^  npm install -D @types\/node +# Node's types/)]);
  });

  it("keeps the type of a CommonJS project that has .js files of its own and says what to do; keeps a tsconfig", () => {
    writeFileSync(join(project, "package.json"), '{ "name": "legacy" }');
    writeFileSync(join(project, "tsconfig.json"), "{}");
    mkdirSync(join(project, "lib"));
    writeFileSync(join(project, "lib/server.js"), "module.exports = {};\n");
    mkdirSync(join(project, "node_modules/dep"), { recursive: true });
    writeFileSync(join(project, "node_modules/dep/index.js"), "");
    const steps = initProject(project);
    expect(steps).toContainEqual({ file: "tsconfig.json", action: "kept", note: expect.stringMatching(/"NodeNext".*"types": \["node"\] under TypeScript 7/) });
    expect(steps).toContainEqual({ file: "package.json", action: "kept",
      note: expect.stringMatching(/^no "type", so CommonJS, and lib\/server\.js would change meaning as ES modules: set "type": "module"/) });
    expect(JSON.parse(read("package.json")).type).toBeUndefined();
    expect(read("tsconfig.json")).toBe("{}");
  });

  it("refuses a project without package.json and a folder outside the project, writing nothing", () => {
    expect(() => initProject(project)).toThrow(/^no package\.json in .*: run akadze init in your project's root/);
    writeFileSync(join(project, "package.json"), "{}");
    expect(() => initProject(project, { dir: "../elsewhere" })).toThrow(/^--dir must be a folder inside the project/);
    expect(read("package.json")).toBe("{}");
  });
});

describe("finding the app module", () => {
  it("takes the named module, else package.json's akadze.app", () => {
    expect(findAppModule("./x.ts", project)).toBe("./x.ts");
    writeFileSync(join(project, "package.json"), JSON.stringify({ akadze: { app: "./jobs/app.ts" } }));
    expect(findAppModule(undefined, project)).toBe("./jobs/app.ts");
  });

  it("says what it expected when there is none", () => {
    writeFileSync(join(project, "package.json"), "{}");
    expect(() => findAppModule(undefined, project)).toThrow(
      /^no app module found in .*: pass --app \.\/path\/to\/app\.ts, or add "akadze": \{ "app": "\.\/path\/to\/app\.ts" \} to package\.json \(`npx akadze init` scaffolds both\); it must export `app`/);
    writeFileSync(join(project, "package.json"), JSON.stringify({ akadze: { app: 42 } }));
    expect(() => findAppModule(undefined, project)).toThrow('package.json "akadze.app" must be a path');
  });

  it("names a missing file and a module that does not load", async () => {
    await expect(importModule("./nope.ts", project)).rejects.toThrow(/^no such file: \.\/nope\.ts/);
    mkdirSync(join(project, "jobs"));
    writeFileSync(join(project, "jobs/app.mjs"), 'throw new Error("boom at import");\n');
    await expect(importModule("./jobs/app.mjs", project)).rejects.toThrow("cannot load ./jobs/app.mjs: boom at import");
  });

  it("says to set \"type\": \"module\" when Node refuses to require() an ES module", async () => {
    mkdirSync(join(project, "jobs"));
    writeFileSync(join(project, "jobs/app.cjs"), 'require("./esm.mjs");\n');
    writeFileSync(join(project, "jobs/esm.mjs"), "await Promise.resolve();\nexport const app = 1;\n");
    await expect(importModule("./jobs/app.cjs", project)).rejects.toThrow(
      /^cannot load \.\/jobs\/app\.cjs: it was loaded as CommonJS, and akadze is an ES module \(.*\)\. Set "type": "module" in package\.json/);
  });
});
