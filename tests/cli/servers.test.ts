import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from '../support/process.ts';
import { startLiveStack, type LiveStack } from './live-stack.ts';

// The served OpenAPI document names the address the process really serves, so "Try it out" and
// generated clients call the right port; FLASHPAY_PUBLIC_URL (behind a proxy) comes first.
async function serversOf(api: string): Promise<Array<{ url: string }>> {
  const document = (await (await fetch(`${api}/docs/json`)).json()) as { servers: Array<{ url: string }> };
  return document.servers;
}

describe('served OpenAPI servers (SV) and usage errors of the new commands', () => {
  const stacks: LiveStack[] = [];
  afterAll(async () => {
    for (const stack of stacks) await stack.stop();
  });

  it('SV-01: flashpay start --port 0 documents the port it really listens on', async () => {
    const stack = await startLiveStack({ args: ['--no-workers'], prefix: 'flashpay-sv1-' });
    stacks.push(stack);
    expect(stack.api).not.toBe('http://127.0.0.1:8080');
    expect((await serversOf(stack.api)).map((s) => s.url)).toEqual([stack.api]);
  }, 120_000);

  it('SV-02: with FLASHPAY_PUBLIC_URL the public address comes first, then the process’s own', async () => {
    const stack = await startLiveStack({
      args: ['--no-workers'],
      prefix: 'flashpay-sv2-',
      env: { FLASHPAY_PUBLIC_URL: 'https://pay.example.test/' },
    });
    stacks.push(stack);
    expect((await serversOf(stack.api)).map((s) => s.url)).toEqual(['https://pay.example.test', stack.api]);
  }, 120_000);

  it('UF-01: start, sim, listen and trigger refuse an unknown flag with exit 2, starting nothing', async () => {
    const cases = [
      ['start', '--prot', '0'],
      ['sim', '--seed', '1', '--tennant', 'acme'],
      ['listen', '--forward', 'http://127.0.0.1:1'],
      ['listen', '--events', 'ORDER_SHIPPED'],
      ['trigger', 'charged', '--oder', 'ord_1'],
    ];
    for (const args of cases) {
      const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, ...args], {
          env: { ...process.env, DATABASE_URL: 'postgres://x@127.0.0.1:1/x' },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        child.once('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect([args, result.code, result.stdout]).toEqual([args, 2, '']);
      expect(result.stderr).toMatch(/unexpected|takes a list/);
    }
  }, 120_000);
});
