// The differential oracle: llhttp, the strict HTTP/1.1 parser inside Node
// (process.versions.llhttp), with every leniency flag off. Reads one request
// stream per line (base64) on stdin and prints, per stream, one JSON line:
//   {"messages": [{"end", "body" (base64), "keepAlive", "upgrade", "method", "url"}],
//    "tail": "clean" | "incomplete" | "error" | "closed" | "upgrade", "error": code}
// The stream is fed one byte at a time, so "end" is the exact offset just past
// each complete message. After an upgrade request the rest of the stream is
// the new protocol's, as a Node server would treat it.
'use strict';
const { HTTPParser, methods } = require('_http_common');
const readline = require('readline');

const MAX_HEADER_SIZE = 65536; // Spindle's default max_head

function frame(bytes) {
  const parser = new HTTPParser();
  const messages = [];
  let current = null;
  let at = 0;
  parser[HTTPParser.kOnMessageBegin] = () => { current = { body: [] }; };
  parser[HTTPParser.kOnHeaders] = () => {};
  parser[HTTPParser.kOnHeadersComplete] = (major, minor, headers, method, url, _s, _m, upgrade, keepAlive) => {
    Object.assign(current, { method: methods[method], url, upgrade, keepAlive });
    return 0;
  };
  parser[HTTPParser.kOnBody] = (chunk) => { current.body.push(Buffer.from(chunk)); };
  parser[HTTPParser.kOnMessageComplete] = () => {
    current.end = at + 1;
    current.body = Buffer.concat(current.body).toString('base64');
    messages.push(current);
    current = null;
  };
  parser.initialize(HTTPParser.REQUEST, {}, MAX_HEADER_SIZE, HTTPParser.kLenientNone ?? 0); // 0: strict on Node 18 too
  let tail = 'clean', error = null;
  for (at = 0; at < bytes.length; at++) {
    const last = messages[messages.length - 1];
    if (last && last.upgrade && !current) { tail = 'upgrade'; break; }
    const result = parser.execute(bytes.subarray(at, at + 1));
    if (result instanceof Error) {
      tail = result.code === 'HPE_CLOSED_CONNECTION' ? 'closed' : 'error';
      error = `${result.code} ${result.reason}`;
      break;
    }
  }
  if (tail === 'clean' && current) tail = 'incomplete';
  // Spaces between messages: llhttp has consumed them, but no message has begun.
  if (tail === 'clean' && at === bytes.length && messages.length &&
      messages[messages.length - 1].end < bytes.length) tail = 'incomplete';
  parser.close();
  return { messages, tail, error };
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  process.stdout.write(`${JSON.stringify(frame(Buffer.from(line, 'base64')))}\n`);
});
