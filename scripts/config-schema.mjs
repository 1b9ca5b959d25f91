#!/usr/bin/env node
// Write mcp-tasks.schema.json (the JSON Schema of the configuration file) from the zod definition in
// src/cli/config/schema.ts, via the build. test/cli/config.test.ts fails when the committed file is stale.
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { configJsonSchema } from '../dist/cli/config/schema.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
writeFileSync(join(root, 'mcp-tasks.schema.json'), `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
process.stdout.write('wrote mcp-tasks.schema.json\n');
