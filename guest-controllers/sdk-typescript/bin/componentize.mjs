#!/usr/bin/env node
// wasmcm-componentize: a plugin's compiled JavaScript -> a wasmcm plugin component that imports
// nothing but the contract.
//
//   wasmcm-componentize <entry.js> -o <plugin.wasm> [--tools <dir>]
//
// 1. rolldown bundles the entry (the plugin's `dist/component.js`, which calls `exportPlugin`)
//    with the SDK and anything else it imports into one ES module, keeping the contract's
//    `wasmcm:` imports external; it is written beside the output as <name>.js, the file stack
//    traces in the host's log point into (`website.js:LINE:COLUMN`).
// 2. componentize-js splices it into the SpiderMonkey engine for the world `plugin` of the SDK's
//    WIT (wit/, the repository's contract) with every WASI feature disabled (stdio, random,
//    clocks, http, fetch-event), and wizer snapshots the module's start-up.
// 3. jco reads the component's world back; an import other than `wasmcm:reconciler/*` fails the
//    build, naming it, before the host would refuse it.
//
// The tools come from the plugin's own node_modules (its devDependencies, pinned by its lock), or
// from --tools / $WASMCM_JS_TOOLS (a directory holding node_modules, such as target/tools/js).
// Owns the build of a component only: it never touches the plugin's sources or dist.

import { existsSync, mkdirSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const sdkDir = dirname(dirname(realpathSync(fileURLToPath(import.meta.url))));
const FEATURES = ["stdio", "random", "clocks", "http", "fetch-event"];
const CONTRACT = /^wasmcm:reconciler\/(cache|log|types)@/;

function fail(message) {
  process.stderr.write(`wasmcm-componentize: error: ${message}\n`);
  process.exit(1);
}

function usage() {
  fail("usage: wasmcm-componentize <entry.js> -o <plugin.wasm> [--tools <dir with node_modules>]");
}

const args = process.argv.slice(2);
let entry;
let out;
let tools = process.env.WASMCM_JS_TOOLS;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "-o" || a === "--out") out = args[++i];
  else if (a === "--tools") tools = args[++i];
  else if (a.startsWith("-")) usage();
  else if (entry === undefined) entry = a;
  else usage();
}
if (!entry || !out) usage();
if (!existsSync(entry)) fail(`${entry} does not exist: compile the plugin first (tsc -b)`);

/** The module file `name` resolves to from `base`, by its package.json's ESM entry. */
function resolvePackage(name, base) {
  for (let dir = resolve(base); ; dir = dirname(dir)) {
    const pkgDir = join(dir, "node_modules", name);
    if (existsSync(join(pkgDir, "package.json"))) {
      const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
      const pick = (e) => {
        if (typeof e === "string") return e;
        if (e && typeof e === "object") {
          if ("." in e) return pick(e["."]);
          for (const c of ["import", "default"]) if (c in e) return pick(e[c]);
        }
        return undefined;
      };
      return join(pkgDir, pick(pkg.exports) ?? pkg.module ?? pkg.main ?? "index.js");
    }
    if (dirname(dir) === dir) return undefined;
  }
}

async function load(name) {
  const bases = [tools, process.cwd()].filter((b) => b !== undefined);
  for (const base of bases) {
    const file = resolvePackage(name, base);
    if (file !== undefined) return import(pathToFileURL(file).href);
  }
  fail(`cannot find ${name} in ${bases.join(" or ")}: run npm ci (the plugin's devDependencies pin it)`);
}

const wit = realpathSync(join(sdkDir, "wit"));
const outPath = resolve(out);
const bundleDir = dirname(outPath);
const bundleName = `${basename(outPath, ".wasm")}.js`;
mkdirSync(bundleDir, { recursive: true });

const { rolldown } = await load("rolldown");
const bundle = await rolldown({
  input: resolve(entry),
  external: [/^wasmcm:/],
  platform: "neutral",
  logLevel: "warn",
  // The SDK and the plugin import no Node.js modules; one that did could not run in the sandbox.
  onLog(level, log) {
    if (level === "warn") process.stderr.write(`wasmcm-componentize: rolldown: ${log.message}\n`);
  },
});
await bundle.write({ dir: bundleDir, entryFileNames: bundleName, format: "esm", codeSplitting: false });
await bundle.close();
const bundled = join(bundleDir, bundleName);

const { componentize } = await load("@bytecodealliance/componentize-js");
const started = Date.now();
// componentize-js maps the source's directory into the engine at build time: run from there.
const cwd = process.cwd();
process.chdir(bundleDir);
let component;
try {
  ({ component } = await componentize({
    sourcePath: bundled,
    witPath: wit,
    worldName: "plugin",
    disableFeatures: FEATURES,
  }));
} catch (e) {
  fail(`componentize-js failed: ${e?.message ?? e}`);
} finally {
  process.chdir(cwd);
}

const { componentWit } = await load("@bytecodealliance/jco");
const world = await componentWit(component);
const imports = [...world.matchAll(/^\s*import ([^;]+);/gm)].map((m) => m[1].trim());
const foreign = imports.filter((i) => !CONTRACT.test(i));
if (foreign.length > 0) {
  fail(`the component imports ${foreign.join(", ")}: the host refuses any import but the contract's (wasmcm:reconciler/cache, log, types)`);
}
mkdirSync(dirname(outPath), { recursive: true });
writeFileSync(outPath, component);
const mib = (statSync(outPath).size / 1048576).toFixed(1);
process.stderr.write(
  `wasmcm-componentize: ${out}: ${mib} MiB, imports ${imports.join(", ")} (no WASI), in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
);
