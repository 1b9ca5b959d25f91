// Baseline: a bare node:http JSON-RPC echo. It reads the body, parses it and answers a result carrying the params
// back, which is the least any JSON-RPC server over HTTP has to do. Usage: node bench/servers/echo.mjs <port>
import { createServer } from 'node:http';

const port = Number(process.argv[2]);
createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const body = JSON.stringify({ jsonrpc: '2.0', id: message.id ?? null, result: { echo: message.params ?? null } });
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
}).listen(port, '127.0.0.1');
