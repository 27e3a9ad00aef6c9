/**
 * The import graph of src/: every import of every src/**\/*.ts file, read with the TypeScript
 * parser (syntax only, no type checking, so it is fast), with relative specifiers resolved to the
 * src files they name. test/house/imports.test.ts checks the house's import rules against it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository root (this file is test/helpers/import-graph.ts). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * How a file names another: `import ... from` (static), `export ... from` (re-export), a bare
 * `import 'x'` (side-effect), `import('x')` with a string literal (dynamic), or a type position's
 * `import('x').T` (import-type).
 */
export type EdgeKind = 'static' | 're-export' | 'side-effect' | 'dynamic' | 'import-type';

export interface ImportEdge {
  /** The importing file, relative to the root with forward slashes: `src/cli/main.ts`. */
  readonly from: string;
  /** The specifier as written: `../io/npy.js`, `node:fs`, `webgpu`. */
  readonly specifier: string;
  /** The src file a relative specifier names, or null for a package or an unresolved path. */
  readonly to: string | null;
  readonly kind: EdgeKind;
  /**
   * Type-only as written: `import type`, `export type`, every named binding marked `type`, or an
   * import type. (An import without `type` whose bindings are used only as types still counts as
   * a value import here: the rules read the code's syntax, not the compiler's elision.)
   */
  readonly typeOnly: boolean;
  /** 1-based line of the import in `from`. */
  readonly line: number;
}

export interface ImportGraph {
  /** Every src/**\/*.ts file, sorted, relative to the root: `src/types.ts`. */
  readonly files: readonly string[];
  readonly edges: readonly ImportEdge[];
}

/** Reads every import of every .ts file under `srcDir` (default: the repository's src/). */
export function readImportGraph(srcDir = join(ROOT, 'src')): ImportGraph {
  const root = dirname(srcDir);
  const files = listTs(srcDir).map((f) => relative(root, f).split(sep).join('/')).sort();
  const known = new Set(files);
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    const add = (specifier: string, kind: EdgeKind, typeOnly: boolean, node: ts.Node): void => {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      edges.push({ from: file, specifier, to: resolve(file, specifier, known), kind, typeOnly, line });
    };
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const clause = node.importClause;
        if (!clause) add(node.moduleSpecifier.text, 'side-effect', false, node);
        else add(node.moduleSpecifier.text, 'static', importIsTypeOnly(clause), node);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        add(node.moduleSpecifier.text, 're-export', exportIsTypeOnly(node), node);
      } else if (
        ts.isImportEqualsDeclaration(node) &&
        ts.isExternalModuleReference(node.moduleReference) &&
        ts.isStringLiteral(node.moduleReference.expression)
      ) {
        add(node.moduleReference.expression.text, 'static', node.isTypeOnly, node);
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments.length > 0 &&
        ts.isStringLiteralLike(node.arguments[0])
      ) {
        add(node.arguments[0].text, 'dynamic', false, node);
      } else if (
        ts.isImportTypeNode(node) &&
        ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal)
      ) {
        add(node.argument.literal.text, 'import-type', true, node);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { files, edges };
}

function importIsTypeOnly(clause: ts.ImportClause): boolean {
  if (clause.isTypeOnly) return true;
  if (clause.name) return false; // a default import is a value
  const bindings = clause.namedBindings;
  if (!bindings || ts.isNamespaceImport(bindings)) return false;
  // `import { type A, type B } from` is type-only; `import {} from` still runs the module.
  return bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
}

function exportIsTypeOnly(node: ts.ExportDeclaration): boolean {
  if (node.isTypeOnly) return true;
  const clause = node.exportClause;
  if (!clause || !ts.isNamedExports(clause)) return false; // `export * from`, `export * as ns from`
  return clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly);
}

/** The src file a relative specifier names (`./a.js` -> a.ts, `./dir/index.js`, `./dir`), or null. */
function resolve(from: string, specifier: string, known: ReadonlySet<string>): string | null {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return null;
  const base = posix.normalize(posix.join(posix.dirname(from), specifier));
  const stem = base.replace(/\.(js|ts|mjs|mts)$/, '');
  for (const candidate of [`${stem}.ts`, `${stem}.mts`, `${base}/index.ts`, base]) {
    if (known.has(candidate)) return candidate;
  }
  return null;
}

function listTs(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listTs(path));
    else if (entry.isFile() && entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/** Tarjan's strongly connected components of a directed graph; each component's nodes sorted. */
export function stronglyConnected(nodes: readonly string[], next: (node: string) => readonly string[]): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  // Iterative, so a long import chain cannot overflow the call stack.
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work: { node: string; children: readonly string[]; i: number }[] = [];
    const open = (node: string): void => {
      index.set(node, counter);
      low.set(node, counter);
      counter++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, children: next(node), i: 0 });
    };
    open(start);
    while (work.length > 0) {
      const top = work[work.length - 1];
      if (top.i < top.children.length) {
        const child = top.children[top.i++];
        if (!index.has(child)) open(child);
        else if (onStack.has(child)) low.set(top.node, Math.min(low.get(top.node)!, index.get(child)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== top.node);
        components.push(component.sort());
      }
    }
  }
  return components;
}

/**
 * Whether `path` matches `pattern`: `*` matches within one path segment, a whole `**` segment
 * matches any number of segments (`src/common/**` is every file under src/common/).
 */
export function matchesGlob(path: string, pattern: string): boolean {
  const body = pattern
    .split('/')
    .map((segment) =>
      segment === '**'
        ? '(?:[^/]+/)*'
        : segment.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*') + '/',
    )
    .join('');
  // Every segment above ends in '/', the last one (a file name or a **) must not.
  const source = body.endsWith('(?:[^/]+/)*') ? `${body}[^/]+` : body.slice(0, -1);
  return new RegExp(`^${source}$`).test(path);
}
