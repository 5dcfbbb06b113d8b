// Writes the served OpenAPI documents to a folder (default build/openapi) for linters and generators.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { channelDocument, serviceDocument } from '../src/openapi.export.ts';

const out = path.resolve(process.argv[2] ?? 'build/openapi');
await mkdir(out, { recursive: true });
await writeFile(path.join(out, 'flashpay.json'), `${JSON.stringify(await serviceDocument(), null, 2)}\n`);
await writeFile(path.join(out, 'channel.json'), `${JSON.stringify(await channelDocument(), null, 2)}\n`);
process.stdout.write(`wrote ${out}/flashpay.json and ${out}/channel.json\n`);
