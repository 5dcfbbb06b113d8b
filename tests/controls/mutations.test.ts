import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { armMutation, MUTATIONS, mutant } from '../../src/platform/mutations.ts';

// Issue 55: the mutation switches remove a guard only when a test arms one in its own process.
// Nothing a deployment sets can reach them: no file under src/ or bin/ arms one, and the registry
// reads no environment variable, argument or file.
const root = new URL('../../', import.meta.url);

async function sources(dir: string): Promise<Array<{ path: string; text: string }>> {
  const out: Array<{ path: string; text: string }> = [];
  for (const entry of await readdir(new URL(dir, root), { recursive: true })) {
    if (!/\.(ts|js|mjs)$/.test(entry)) continue;
    out.push({ path: `${dir}${entry}`, text: await readFile(new URL(`${dir}${entry}`, root), 'utf8') });
  }
  return out;
}

describe('mutation switches (src/platform/mutations.ts)', () => {
  it('MU-00 only tests arm a mutation: no production file calls armMutation, and the registry reads no configuration', async () => {
    const files = [...(await sources('src/')), ...(await sources('bin/'))];
    expect(files.length).toBeGreaterThan(100);
    const arming = files.filter((f) => f.path !== 'src/platform/mutations.ts' && f.text.includes('armMutation'));
    expect(arming.map((f) => f.path)).toEqual([]);
    const registry = files.find((f) => f.path === 'src/platform/mutations.ts')?.text ?? '';
    expect(registry).toContain('export function armMutation');
    expect(registry).not.toMatch(/process\.(env|argv)|readFile|import\s/);
  });

  it('MU-01 a switch is off until armed, armed for its subjects only, and off again after its disarm', () => {
    const name = MUTATIONS[0];
    expect(mutant(name)).toBe(false);
    const disarmScoped = armMutation(name, ['ord_a']);
    expect([mutant(name, 'ord_a'), mutant(name, 'ord_b'), mutant(name)]).toEqual([true, false, false]);
    disarmScoped();
    const disarm = armMutation(name);
    expect([mutant(name, 'ord_b'), mutant(name), mutant(MUTATIONS[1])]).toEqual([true, true, false]);
    disarmScoped(); // a stale disarm leaves a later arming alone
    expect(mutant(name)).toBe(true);
    disarm();
    expect(mutant(name)).toBe(false);
  });
});
