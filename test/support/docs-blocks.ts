// Turns the TypeScript blocks of the docs into modules: extract, add the prelude import, type-check
// all of them in one compiler run. The conventions are described in docs/README.md.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { basename, join, relative } from "node:path";
import ts from "typescript";

/** A fenced ```ts block as written in a Markdown file. */
export interface DocBlock {
  /** Path relative to the repository root, e.g. `docs/retries.md`. */
  file: string;
  /** 1-based line of the block's first code line. */
  line: number;
  code: string;
  flags: Set<BlockFlag>;
}

/** One module: a block plus the `continued` blocks that follow it. */
export interface DocExample {
  file: string;
  line: number;
  run: boolean;
  blocks: DocBlock[];
  /** Absolute path of the generated module. */
  path: string;
  /** Where each generated line came from (index 0 = generated line 1); `null` for added lines. */
  origin: ({ file: string; line: number } | null)[];
}

const FLAGS = ["run", "continued"] as const;
export type BlockFlag = (typeof FLAGS)[number];

const OPEN = /^ {0,3}```(ts|typescript)(?:[ \t]+(.*))?$/;
const CLOSE = /^ {0,3}```\s*$/;

/** Every ```ts block of one Markdown text; an unknown flag is an error so a typo never skips a block. */
export function extractBlocks(markdown: string, file: string): DocBlock[] {
  const lines = markdown.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = OPEN.exec(lines[i]);
    if (!open) {
      if (/^ {0,3}```/.test(lines[i]) && !CLOSE.test(lines[i])) i = skipFence(lines, i); // another language
      continue;
    }
    const flags = new Set<BlockFlag>();
    for (const word of (open[2] ?? "").split(/\s+/).filter(Boolean)) {
      if (!(FLAGS as readonly string[]).includes(word)) throw new Error(`${file}:${i + 1}: unknown flag "${word}" on a ts block (use: ${FLAGS.join(", ")})`);
      flags.add(word as BlockFlag);
    }
    const end = skipFence(lines, i);
    if (end >= lines.length) throw new Error(`${file}:${i + 1}: the ts block is never closed`);
    blocks.push({ file, line: i + 2, code: lines.slice(i + 1, end).join("\n"), flags });
    i = end;
  }
  return blocks;
}

function skipFence(lines: string[], open: number): number {
  let i = open + 1;
  while (i < lines.length && !CLOSE.test(lines[i])) i++;
  return i;
}

/** Joins each block with the `continued` blocks after it (same file) into one example. */
export function groupExamples(blocks: DocBlock[]): Omit<DocExample, "path" | "origin">[] {
  const examples: Omit<DocExample, "path" | "origin">[] = [];
  for (const block of blocks) {
    const previous = examples.at(-1);
    if (block.flags.has("continued")) {
      if (!previous || previous.file !== block.file) throw new Error(`${block.file}:${block.line}: a "continued" block needs a ts block before it`);
      if (block.flags.has("run") && !previous.run) throw new Error(`${block.file}:${block.line}: "run" belongs on the first block of an example`);
      previous.blocks.push(block);
    } else {
      examples.push({ file: block.file, line: block.line, run: block.flags.has("run"), blocks: [block] });
    }
  }
  return examples;
}

/** The Markdown files whose blocks are checked: docs/*.md and the README. */
export function docFiles(root: string): string[] {
  const docs = existsSync(join(root, "docs")) ? readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`) : [];
  return [...(existsSync(join(root, "README.md")) ? ["README.md"] : []), ...docs];
}

/** Extracts, groups and writes every example under `outDir`, each importing the prelude names it uses. */
export function writeExamples(outDir: string, files: { file: string; markdown: string }[], prelude: string, preludeNames: readonly string[]): DocExample[] {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const examples: DocExample[] = [];
  for (const { file, markdown } of files) {
    for (const example of groupExamples(extractBlocks(markdown, file))) {
      const path = join(outDir, `${basename(file, ".md")}-L${example.line}.ts`);
      const body = example.blocks.flatMap((b) => b.code.split("\n").map((text, k) => ({ text, origin: { file: b.file, line: b.line + k } })));
      const names = preludeNamesUsed(body.map((l) => l.text).join("\n"), preludeNames);
      let specifier = relative(outDir, prelude).replace(/\\/g, "/").replace(/\.ts$/, ".js");
      if (!specifier.startsWith(".")) specifier = `./${specifier}`;
      const header = names.length > 0 ? `import { ${names.join(", ")} } from "${specifier}";` : "// (no prelude names)";
      writeFileSync(path, [header, ...body.map((l) => l.text), "export {};", ""].join("\n"));
      examples.push({ ...example, path, origin: [null, ...body.map((l) => l.origin), null] });
    }
  }
  return examples;
}

/** Prelude names the code mentions but does not declare at its top level. */
export function preludeNamesUsed(code: string, preludeNames: readonly string[]): string[] {
  const source = ts.createSourceFile("block.ts", code, ts.ScriptTarget.ES2022, true);
  const declared = new Set<string>();
  const used = new Set<string>();
  const declare = (name: ts.BindingName | ts.Identifier | undefined) => {
    if (!name) return;
    if (ts.isIdentifier(name)) declared.add(name.text);
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) declare(element.name);
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && statement.importClause) {
      const clause = statement.importClause;
      declare(clause.name);
      if (clause.namedBindings && ts.isNamespaceImport(clause.namedBindings)) declare(clause.namedBindings.name);
      if (clause.namedBindings && ts.isNamedImports(clause.namedBindings)) for (const e of clause.namedBindings.elements) declare(e.name);
    } else if (ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations) declare(d.name);
    } else if (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement)
      || ts.isTypeAliasDeclaration(statement) || ts.isEnumDeclaration(statement)) {
      declare(statement.name);
    }
  }
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node)) used.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return preludeNames.filter((name) => used.has(name) && !declared.has(name));
}

/**
 * Type-checks the examples with the repository's tsconfig (so `akadze` resolves through `paths`) in
 * one program; returns one line per problem, located in the Markdown file.
 */
export function typeCheckExamples(root: string, examples: DocExample[]): Map<DocExample, string[]> {
  const { config, error } = ts.readConfigFile(join(root, "tsconfig.json"), ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, "\n"));
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, root);
  const program = ts.createProgram(examples.map((e) => e.path), { ...parsed.options, noEmit: true });
  const problems = new Map<DocExample, string[]>();
  for (const example of examples) {
    const source = program.getSourceFile(example.path);
    if (!source) throw new Error(`the compiler did not load ${example.path}`);
    const found = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => {
      const { line, character } = source.getLineAndCharacterOfPosition(d.start ?? 0);
      const origin = example.origin[line];
      const where = origin ? `${origin.file}:${origin.line}:${character + 1}` : `${example.file}:${example.line} (added line ${line + 1})`;
      return `${where} TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n  ")}`;
    });
    problems.set(example, found);
  }
  return problems;
}

/** Reads the Markdown files named by `docFiles`. */
export function readDocs(root: string, files = docFiles(root)): { file: string; markdown: string }[] {
  return files.map((file) => ({ file, markdown: readFileSync(join(root, file), "utf8") }));
}
