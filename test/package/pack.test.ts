/**
 * The package as a user gets it: `npm pack` the built project (run `npm run build` first), install
 * the tarball into a fresh app from the npm cache alone, and use it there: ESM import, CommonJS
 * require, a strict TypeScript compile (with and without skipLibCheck, and a call that must not
 * compile), and the installed CLI.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const tsc = join(root, 'node_modules/typescript/bin/tsc');
let dir = '';
let app = '';

function run(cmd: string, args: string[], cwd: string, input?: string) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 120_000, input });
  return { status: r.status, out: `${r.stdout}${r.stderr}`, stdout: r.stdout };
}
function npm(args: string[], cwd: string) {
  const r = run('npm', args, cwd);
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed in ${cwd}:\n${r.out}`);
  return r.stdout;
}
const cli = (...args: string[]) => run(process.execPath, [join(app, 'node_modules/webgpu-knn/dist/cli/main.js'), ...args], app);

beforeAll(() => {
  if (!existsSync(join(root, 'dist/index.js'))) throw new Error('dist/index.js is missing: run npm run build first');
  dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-pack-'));
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], root)) as { filename: string }[];
  app = join(dir, 'app');
  npm(['init', '-y'], (run('mkdir', [app], dir), app));
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, packed[0]!.filename)], app);
}, 180_000);
afterAll(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

describe('npm pack --dry-run', () => {
  it('ships LICENSE, no CI or test scripts, and no source map without its source', () => {
    const [pack] = JSON.parse(npm(['pack', '--dry-run', '--json'], root)) as { files: { path: string }[] }[];
    const files = pack!.files.map((f) => f.path);
    expect(files).toContain('LICENSE');
    expect(files).toContain('dist/index.js');
    expect(files).toContain('scripts/setup-webgpu.sh');
    // setup-webgpu.sh probes the adapter with probe-adapter.mjs: both, and no other script.
    expect(files.filter((f) => f.startsWith('scripts/')).sort()).toEqual(['scripts/probe-adapter.mjs', 'scripts/setup-webgpu.sh']);
    expect(files.filter((f) => /^(test|peers|\.ci|src)\//.test(f))).toEqual([]);
    const maps = files.filter((f) => f.endsWith('.map'));
    const sources = new Set(files);
    for (const m of maps) {
      const map = JSON.parse(readFileSync(join(root, m), 'utf8')) as { sources: string[] };
      for (const s of map.sources) expect(sources.has(join(m, '..', s))).toBe(true);
    }
  });
});

const search = `
const backend = await createBackend({ backend: 'cpu' });
const index = new FlatIndex(backend, { dim: 2, metric: 'l2' });
await index.add(new Float32Array([0, 0, 10, 10, 3, 3]));
const { labels } = await index.search(new Float32Array([9, 9, 0.5, 0.5]), 2);
console.log(Array.from(labels, Number).join(','));
await index.dispose();
backend.dispose();
`;

describe('the installed package', () => {
  it('is imported as ESM and searches', () => {
    writeFileSync(join(app, 'esm.mjs'), `import { createBackend, FlatIndex } from 'webgpu-knn';\n${search}`);
    const r = run(process.execPath, ['esm.mjs'], app);
    expect(r.out).toContain('1,2,0,2');
    expect(r.status).toBe(0);
  }, 60_000);

  it('is required as CommonJS and searches', () => {
    writeFileSync(join(app, 'cjs.cjs'), `const { createBackend, FlatIndex } = require('webgpu-knn');\n(async () => {${search}})();`);
    const r = run(process.execPath, ['cjs.cjs'], app);
    expect(r.out).toContain('1,2,0,2');
    expect(r.status).toBe(0);
  }, 60_000);

  const tsconfig = (skipLibCheck: boolean, file: string) => JSON.stringify({
    compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, skipLibCheck },
    files: [file],
  });
  for (const skipLibCheck of [false, true]) {
    it(`compiles a strict TypeScript app (skipLibCheck ${skipLibCheck}), and refuses createBackend({ device: 42 })`, () => {
      writeFileSync(join(app, 'package.json'), JSON.stringify({ ...JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')), type: 'module' }));
      writeFileSync(join(app, 'good.ts'), `import { createBackend, FlatIndex } from 'webgpu-knn';\n${search}\nexport {};\n`);
      writeFileSync(join(app, 'bad.ts'), `import { createBackend } from 'webgpu-knn';\nawait createBackend({ device: 42 });\nexport {};\n`);
      writeFileSync(join(app, 'tsconfig.good.json'), tsconfig(skipLibCheck, 'good.ts'));
      writeFileSync(join(app, 'tsconfig.bad.json'), tsconfig(skipLibCheck, 'bad.ts'));
      const good = run(process.execPath, [tsc, '-p', 'tsconfig.good.json'], app);
      expect(good.out).toBe('');
      expect(good.status).toBe(0);
      const bad = run(process.execPath, [tsc, '-p', 'tsconfig.bad.json'], app);
      expect(bad.out).toMatch(/bad\.ts\(2,\d+\): error TS2322: Type 'number' is not assignable to type 'GPUDevice'/);
      expect(bad.status).not.toBe(0);
    }, 60_000);
  }
});

describe('a CommonJS TypeScript app', () => {
  it('compiles strict (module NodeNext in a package without "type": "module"), its import typed from the package', () => {
    const cjs = join(app, 'cjs-ts');
    run('mkdir', ['-p', join(cjs, 'node_modules')], app);
    writeFileSync(join(cjs, 'package.json'), JSON.stringify({ name: 'cjs-ts', version: '1.0.0' }));
    run('ln', ['-s', join(app, 'node_modules/webgpu-knn'), join(cjs, 'node_modules/webgpu-knn')], cjs);
    run('ln', ['-s', join(app, 'node_modules/@webgpu'), join(cjs, 'node_modules/@webgpu')], cjs);
    writeFileSync(join(cjs, 'app.ts'), `import { createBackend, FlatIndex } from 'webgpu-knn';\n(async () => {${search}})();\n`);
    writeFileSync(join(cjs, 'bad.ts'), `import { FlatIndex } from 'webgpu-knn';\nnew FlatIndex(42, { dim: 2 });\n`);
    const config = (file: string) => JSON.stringify({ compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true }, files: [file] });
    writeFileSync(join(cjs, 'tsconfig.json'), config('app.ts'));
    writeFileSync(join(cjs, 'tsconfig.bad.json'), config('bad.ts'));
    const good = run(process.execPath, [tsc, '-p', 'tsconfig.json'], cjs);
    expect(good.out).toBe('');
    expect(good.status).toBe(0);
    const bad = run(process.execPath, [tsc, '-p', 'tsconfig.bad.json'], cjs);
    expect(bad.out).toMatch(/bad\.ts\(2,\d+\): error TS2345: Argument of type 'number' is not assignable to parameter of type 'Backend'/);
  }, 60_000);
});

describe('the installed CLI', () => {
  // The no-adapter hint names this script by its path in node_modules: it must run from there.
  it.skipIf(process.env.WEBGPU_REQUIRED !== '1')('the shipped setup-webgpu.sh --check finds the adapter from node_modules', () => {
    const r = run('bash', [join(app, 'node_modules/webgpu-knn/scripts/setup-webgpu.sh'), '--check'], app);
    expect(r.out).toMatch(/setup-webgpu: adapter found: /);
    expect(r.status).toBe(0);
  });

  it('prints its version', () => {
    const r = cli('--version');
    expect(r.stdout.trim()).toBe(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
    expect(r.status).toBe(0);
  });

  it('builds an index and searches it', () => {
    // An .fvecs file: each row is its dimension (int32) then its values (float32).
    const rows = [[0, 0], [10, 10], [3, 3]];
    const buf = Buffer.alloc(rows.length * 12);
    rows.forEach((row, i) => { buf.writeInt32LE(2, i * 12); buf.writeFloatLE(row[0]!, i * 12 + 4); buf.writeFloatLE(row[1]!, i * 12 + 8); });
    writeFileSync(join(app, 'x.fvecs'), buf);
    const built = cli('build', '--input', 'x.fvecs', '--out', 'x.idx', '--backend', 'cpu');
    expect(built.out).not.toMatch(/Error/);
    expect(built.status).toBe(0);
    const found = cli('search', '--index', 'x.idx', '--queries', 'x.fvecs', '--k', '1', '--out', 'nn.ivecs', '--backend', 'cpu');
    expect(found.status).toBe(0);
    const nn = readFileSync(join(app, 'nn.ivecs'));
    expect([0, 1, 2].map((i) => nn.readInt32LE(i * 8 + 4))).toEqual([0, 1, 2]);
  }, 60_000);

  it('runs the default demo', () => {
    const r = cli();
    expect(r.out).not.toMatch(/npm ci|at .*\.js:\d+/);
    expect(r.status).toBe(0);
  }, 120_000);
});
