// ESLint rule: no import circle anywhere under src/ — between files, between the rooms (sub-folders)
// of one module, between modules, or between a module and the entry points above it.
//
// One check covers every level. Each folder's children (its files and its sub-folders) are the
// units at that level; an import from file F to file T is an arrow, at the deepest folder holding
// both, from the child holding F to the child holding T. A circle of files always shows up as a
// circle of units in that folder, so it is enough to refuse an arrow whose target unit reaches back
// to its source unit. Type-only imports count: a reader follows them like any other.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** file → { mtimeMs, targets }: each file is read and scanned once per change, across lint calls. */
const scanned = new Map();

/** Absolute paths of the relative imports in `text` (import, import type, export … from, import()). */
export function importTargets(file, text) {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  const targets = [];
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    targets.push(resolveImport(path.resolve(path.dirname(file), fileName)));
  }
  return targets;
}

function resolveImport(target) {
  if (/\.[cm]?[jt]sx?$/.test(target)) return target.replace(/\.([cm]?)js(x?)$/, '.$1ts$2');
  for (const candidate of [`${target}.ts`, `${target}.d.ts`, path.join(target, 'index.ts')]) {
    if (exists(candidate)) return candidate;
  }
  return target;
}

function exists(file) {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function scan(file) {
  const mtimeMs = statSync(file).mtimeMs;
  const known = scanned.get(file);
  if (known?.mtimeMs === mtimeMs) return known.targets;
  const targets = importTargets(file, readFileSync(file, 'utf8'));
  scanned.set(file, { mtimeMs, targets });
  return targets;
}

/** The last graph built from disk: shared by every file of one lint run while nothing changes. */
let lastGraph;
// Listing and stat-ing src/ costs ~10 ms, more than the check itself: once a second is enough
// (a file saved in an editor counts for the others a second later; the file linted counts at once).
const RESCAN_AFTER_MS = 1000;

/** The import graph of every .ts file under `dir`, read from disk; `own` overrides one file's imports. */
export function importGraph(dir, own) {
  if (lastGraph?.dir !== dir || performance.now() - lastGraph.at > RESCAN_AFTER_MS) rescan(dir);
  if (!own) return lastGraph.graph;
  // The file being linted as the linter sees it: a graph of its own when its imports differ from disk.
  const onDisk = new Set(lastGraph.graph.get(own.file));
  const targets = new Set(own.targets);
  if (onDisk.size === targets.size && [...targets].every((t) => onDisk.has(t))) return lastGraph.graph;
  return new Map(lastGraph.graph).set(own.file, [...targets]);
}

function rescan(dir) {
  const graph = new Map();
  let changed = lastGraph?.dir !== dir;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.join(entry.parentPath, entry.name);
    const targets = scan(file);
    if (lastGraph?.graph.get(file) !== targets) changed = true;
    graph.set(file, targets);
  }
  // The same Map while nothing changed, so the arrows worked out per folder are kept.
  if (changed || graph.size !== lastGraph.graph.size) lastGraph = { dir, graph, at: 0 };
  lastGraph.at = performance.now();
}

/** The child of `folder` that holds `file` ('a.ts' or 'rooms'), or undefined when outside it. */
function unitOf(folder, file) {
  const prefix = folder.endsWith(path.sep) ? folder : folder + path.sep;
  if (!file.startsWith(prefix)) return undefined;
  const end = file.indexOf(path.sep, prefix.length);
  return end < 0 ? file.slice(prefix.length) : file.slice(prefix.length, end);
}

/**
 * The circle the arrow `from → to` closes, as the units of their deepest common folder
 * (`[unit(to), …, unit(from)]`, shortest first), or undefined when `to` cannot reach back.
 */
export function circleThrough(graph, from, to) {
  const folder = commonFolder(from, to);
  const start = unitOf(folder, to);
  const goal = unitOf(folder, from);
  if (start === undefined || goal === undefined || start === goal) return undefined;
  const arrows = arrowsIn(graph, folder);
  const cameFrom = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const unit = queue.shift();
    if (unit === goal) {
      const trail = [];
      for (let at = goal; at !== undefined; at = cameFrom.get(at)) trail.unshift(at);
      return { folder, units: trail };
    }
    for (const next of arrows.get(unit) ?? []) {
      if (cameFrom.has(next)) continue;
      cameFrom.set(next, unit);
      queue.push(next);
    }
  }
  return undefined;
}

/** graph → folder → unit → the units it imports: one pass over the graph per folder asked about. */
const arrowsMemo = new WeakMap();

function arrowsIn(graph, folder) {
  const byFolder = arrowsMemo.get(graph) ?? arrowsMemo.set(graph, new Map()).get(graph);
  const known = byFolder.get(folder);
  if (known) return known;
  const arrows = new Map();
  for (const [file, targets] of graph) {
    const unit = unitOf(folder, file);
    if (unit === undefined) continue;
    for (const target of targets) {
      const next = unitOf(folder, target);
      if (next !== undefined && next !== unit) (arrows.get(unit) ?? arrows.set(unit, new Set()).get(unit)).add(next);
    }
  }
  byFolder.set(folder, arrows);
  return arrows;
}

function commonFolder(a, b) {
  let folder = path.dirname(a);
  while (unitOf(folder, b) === undefined) folder = path.dirname(folder);
  return folder;
}

export const noImportCircles = {
  meta: {
    type: 'problem',
    docs: { description: 'no import circle between files, rooms or modules under src/' },
    schema: [{ type: 'object', properties: { root: { type: 'string' } }, additionalProperties: false }],
    messages: {
      circle: "'{{source}}' closes an import circle in {{folder}}/: {{circle}}",
    },
  },
  create(context) {
    const root = context.options[0]?.root ?? context.cwd;
    const src = path.join(root, 'src');
    const file = context.filename;
    if (unitOf(src, file) === undefined) return {};
    const imports = [];
    function collect(node) {
      const source = node.source?.value;
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      imports.push({ node: node.source, source, target: resolveImport(path.resolve(path.dirname(file), source)) });
    }
    // Checked once the whole file is read: its own imports come from its AST, not from disk.
    function check() {
      const inside = imports.filter((i) => unitOf(src, i.target) !== undefined);
      if (inside.length === 0) return;
      const graph = importGraph(src, { file, targets: imports.map((i) => i.target) });
      for (const { node, source, target } of inside) {
        const found = circleThrough(graph, file, target);
        if (!found) continue;
        const circle = [unitOf(found.folder, file), ...found.units].join(' → ');
        const folder = path.relative(root, found.folder);
        context.report({ node, messageId: 'circle', data: { source, folder, circle } });
      }
    }
    return {
      ImportDeclaration: collect,
      ExportNamedDeclaration: collect,
      ExportAllDeclaration: collect,
      ImportExpression: collect,
      'Program:exit': check,
    };
  },
};
