// The README's Layout table is the map of the tree (issue 15): every folder of src/ has a row, every file a
// row names exists where the row says, and every statement file of src/sql is named in its row, under its family's folder. And test/ mirrors src/: each folder of suites is named after a layer.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The Layout table's rows: folder (as written, e.g. `src/sql`) and what the row says. */
function layoutRows(): { folder: string; text: string }[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Layout"));
  const table = section.slice(0, section.indexOf("\n## ") > 0 ? section.indexOf("\n## ") : undefined);
  return table.split("\n").filter((line) => /^\| `[^`]+`/.test(line)).map((line) => {
    const [, first, text] = line.split("|");
    return { folder: first.trim().split(",")[0].replace(/`/g, "").replace(/\/$/, ""), text };
  });
}

function foldersUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).filter((name) => statSync(join(ROOT, dir, name)).isDirectory())
    .flatMap((name) => [`${dir}/${name}`, ...foldersUnder(`${dir}/${name}`)]);
}

describe("the README's Layout table", () => {
  const rows = layoutRows();

  it("has a row for every folder of src/ (or names it in its parent's row)", () => {
    const named = new Set(rows.flatMap((r) => [r.folder, ...[...r.text.matchAll(/`(src\/[\w/-]+)`/g)].map((m) => m[1])]));
    for (const folder of ["src", ...foldersUnder("src")]) expect(named, `no Layout row for ${folder}`).toContain(folder);
  });

  it("names only files that exist in the row's folder", () => {
    for (const { folder, text } of rows.filter((r) => r.folder.startsWith("src"))) {
      for (const [, file] of text.matchAll(/`([\w.-]+\.tsx?)`/g)) {
        expect(statSync(join(ROOT, folder, file), { throwIfNoEntry: false })?.isFile(), `${folder}/${file} (named in the Layout table)`).toBe(true);
      }
    }
  });

  it("names every statement file of src/sql under its family's folder, and nothing that is not one", () => {
    const text = rows.find((r) => r.folder === "src/sql")!.text;
    // The row reads "`src/sql/claim` (... `claim`, `fair` ...), `src/sql/settle` (...)": each family's part runs to the next.
    const parts = text.split(/`src\/sql\/([\w-]+)`/);
    const named = new Map<string, string>(); // statement file -> family the row names it under ("" before any family)
    for (let i = 0; i < parts.length; i += 2) {
      for (const [, name] of parts[i].matchAll(/`([a-z][\w-]*)`/g)) named.set(name, i === 0 ? "" : parts[i - 1]);
    }
    const files = readdirSync(join(ROOT, "src/sql"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts") && !f.endsWith("migrations.generated.ts")).map((f) => f.slice(0, -3));
    for (const file of files) {
      const [family, name] = file.includes("/") ? file.split("/") : ["", file];
      expect(named.get(name), `src/sql/${file}.ts is not named under its family in the Layout table`).toBe(family);
    }
    const names = files.map((f) => f.split("/").pop());
    for (const name of named.keys()) expect(names, `\`${name}\` is in the src/sql row but not in src/sql`).toContain(name);
  });
});

describe("test/ as the specification tree", () => {
  /** Folders of test/ that hold no behaviour suite of one layer: helpers, fixtures, and what checks the repository or the package. */
  const APART = ["test/support", "test/fixtures", "test/repo", "test/package"];
  /** The layer a test folder mirrors: a folder of src/, or a top-level module (`control.ts`, `migrate.ts`). */
  const mirrored = (folder: string) => {
    const inSrc = `src/${folder.slice("test/".length)}`;
    return statSync(join(ROOT, inSrc), { throwIfNoEntry: false })?.isDirectory() === true
      || (!inSrc.slice(4).includes("/") && statSync(join(ROOT, `${inSrc}.ts`), { throwIfNoEntry: false })?.isFile() === true);
  };

  it("mirrors src/: every folder of suites is named after a folder or a top-level module of src/", () => {
    const folders = foldersUnder("test").filter((f) => !APART.some((a) => f === a || f.startsWith(`${a}/`)));
    const astray = folders.filter((f) => !/\/faults$/.test(f) && !mirrored(f));
    expect(astray, "test folders that mirror nothing in src/").toEqual([]);
  });

  it("keeps no suite loose in test/ itself", () => {
    expect(readdirSync(join(ROOT, "test")).filter((f) => f.endsWith(".test.ts"))).toEqual([]);
  });
});
