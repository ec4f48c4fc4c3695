// The SQL a reader could not see (issue 23, item 3): the claim and settle statements as the runtime sends them
// are committed in docs/sql/, rendered by scripts/render-sql.ts; this renders them again and fails on drift.
import { readdirSync, readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { renderStatements, RENDERED_DIR } from "../../scripts/render-sql.js";
import { CTE } from "../../src/sql/claim/cte-names.js";

it("docs/sql holds the claim and settle statements exactly as the runtime sends them (npm run render-sql renews it)", async () => {
  const rendered = await renderStatements();
  expect(readdirSync(RENDERED_DIR).sort()).toEqual(Object.keys(rendered).sort());
  for (const [name, text] of Object.entries(rendered)) {
    const committed = readFileSync(`${RENDERED_DIR}/${name}`, "utf8").replace(/^-- Rendered by [^\n]*\n/, "");
    expect(committed, `${RENDERED_DIR}/${name} is stale: run npm run render-sql and commit it`).toBe(text);
  }
}, 60_000);

it("a CTE one fragment defines and another file reads is named only through cte-names.ts, and each rendered statement that reads one defines it", async () => {
  const rendered = await renderStatements();
  const dir = "src/sql";
  for (const file of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".ts") || file.endsWith("cte-names.ts") || file.endsWith("migrations.generated.ts")) continue;
    const text = readFileSync(`${dir}/${file}`, "utf8");
    // Inside SQL, a shared name written out ("from claimed", "claimed as (") instead of ${cte("claimed")}.
    for (const name of Object.values(CTE)) {
      const literal = new RegExp(`(?:from|join|exists \\(select 1 from)\\s+${name}\\b(?!_)|[\\s\`]${name} as \\(`);
      expect(literal.test(text), `${dir}/${file} writes the shared CTE name ${name}: use cte() from cte-names.ts`).toBe(false);
    }
  }
  for (const [statement, text] of Object.entries(rendered)) {
    if (statement.startsWith("rider-")) continue; // a rider's CTEs are a part: the core defines what they read
    for (const name of Object.values(CTE)) {
      const read = new RegExp(`from ${name}\\b(?!_)`).test(text);
      const defined = new RegExp(`[\\s,]${name} as \\(`).test(text);
      if (read) expect(defined, `${statement} reads ${name} without defining it`).toBe(true);
    }
  }
}, 60_000);
