// A scripted stand-in for the Anthropic Messages API on loopback, for test/long/claude-code.test.ts. It records every
// request Claude Code makes (what the model would have received) and answers from a script: the first turn that
// offers the named tool calls it with the given arguments; any later turn, or a request without the tool (titles,
// summaries), answers a short text. Streaming (SSE) and plain JSON answers, as the request asks.
import { createServer } from 'node:http';

/** Start the stub; `script` = { tool (exact tool name as Claude Code lists it), input }. */
export async function startMessagesStub(script) {
  const received = [];
  let toolCalls = 0;
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body;
      try {
        body = text ? JSON.parse(text) : {};
      } catch {
        body = { raw: text };
      }
      received.push({ method: request.method, url: request.url, at: Date.now(), body });
      if (request.url?.includes('count_tokens')) return json(response, { input_tokens: 10 });
      if (!request.url?.startsWith('/v1/messages')) return json(response, {}, 404);
      const names = Array.isArray(body.tools) ? body.tools.map((tool) => tool.name) : [];
      const sent = JSON.stringify(body.messages ?? []);
      // Claude Code defers MCP tools behind ToolSearch: the model loads a schema first, then calls the tool.
      const offered = names.includes(script.tool) || (sent.includes('tool_reference') && sent.includes(script.tool));
      const callTool = (offered || names.includes('ToolSearch')) && toolCalls < (script.calls ?? 1) && !sent.includes(`"name":"${script.tool}"`);
      const search = callTool && !offered;
      if (callTool && !search) toolCalls += 1;
      const content = search
        ? [{ type: 'tool_use', id: `toolu_search${Date.now()}`, name: 'ToolSearch', input: { query: `select:${script.tool}` } }]
        : callTool
          ? [{ type: 'tool_use', id: `toolu_${toolCalls}${Date.now()}`, name: script.tool, input: script.input }]
          : [{ type: 'text', text: 'Noted.' }];
      const message = {
        id: `msg_${received.length}`,
        type: 'message',
        role: 'assistant',
        model: body.model ?? 'claude-stub',
        content,
        stop_reason: callTool ? 'tool_use' : 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 5 },
      };
      if (body.stream) return stream(response, message);
      return json(response, message);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    received,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

function json(response, value, status = 200) {
  const payload = JSON.stringify(value);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }).end(payload);
}

function stream(response, message) {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (event, data) => response.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  send('message_start', { message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } });
  message.content.forEach((block, index) => {
    if (block.type === 'tool_use') {
      send('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    } else {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    }
    send('content_block_stop', { index });
  });
  send('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: 5 } });
  send('message_stop', {});
  response.end();
}
