import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/platform/errors.ts';
import { mermaidDiagram } from '../../src/orders/orders.states.ts';
import { GLOBAL_CLASSES, ORDER_CLASSES } from '../../src/reconcile/reconcile.rules.ts';

const doc = (name: string) => readFile(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

// The docs are part of the contract: these fail when code and docs drift apart.
describe('docs agree with the code', () => {
  it('every error code is listed in docs/errors.md with its HTTP status', async () => {
    const text = await doc('errors.md');
    for (const [code, status] of Object.entries(ERROR_STATUS)) expect(text).toContain(`| \`${code}\` | ${status} |`);
  });

  it('docs/state-machine.md holds the diagram generated from the transition table', async () => {
    expect(await doc('state-machine.md')).toContain(`\`\`\`mermaid\n${mermaidDiagram()}\n\`\`\``);
  });

  it('docs/reconciliation.md describes every reconciliation class', async () => {
    const text = await doc('reconciliation.md');
    for (const c of [...ORDER_CLASSES, ...GLOBAL_CLASSES]) expect(text).toContain(c);
  });
});
