// Writes the served OpenAPI documents to a folder (default build/openapi) for linters and generators.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { serviceDocument } from '../src/openapi.export.ts';

const out = path.resolve(process.argv[2] ?? 'build/openapi');
await mkdir(out, { recursive: true });
await writeFile(path.join(out, 'flashpay.json'), `${JSON.stringify(await serviceDocument(), null, 2)}\n`);
process.stdout.write(`wrote ${out}/flashpay.json\n`);
