// ESLint rule: a domain folder under src/ is entered only through its index.ts. src/platform is
// the shared kernel and may be imported anywhere; a module may import its own files freely.
import path from 'node:path';
import { noImportCircles } from './import-circles.js';

const KERNEL = new Set(['platform']);

/** The domain a path lies in ('src/orders/x.ts' → 'orders'), or undefined outside a domain folder. */
function domainOf(file, root) {
  const rel = path.relative(path.join(root, 'src'), file);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  const parts = rel.split(path.sep);
  return parts.length > 1 ? parts[0] : undefined;
}

export const moduleWalls = {
  meta: {
    type: 'problem',
    docs: { description: 'enter another domain module only through its index.ts' },
    schema: [{ type: 'object', properties: { root: { type: 'string' } }, additionalProperties: false }],
    messages: {
      pastIndex:
        "'{{source}}' reaches past src/{{domain}}/index.ts; import what {{domain}} exports from its index.ts instead",
    },
  },
  create(context) {
    const root = context.options[0]?.root ?? context.cwd;
    const file = context.filename;
    const own = domainOf(file, root);
    function check(node) {
      const source = node.source?.value;
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const target = path.resolve(path.dirname(file), source);
      const domain = domainOf(target, root);
      if (!domain || domain === own || KERNEL.has(domain)) return;
      if (path.relative(path.join(root, 'src', domain), target) === 'index.ts') return;
      context.report({ node: node.source, messageId: 'pastIndex', data: { source, domain } });
    }
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

export default { rules: { 'module-walls': moduleWalls, 'no-import-circles': noImportCircles } };
