// A loopback proxy for the conformance suite, which cannot send a header: every request it
// forwards to the host gets `Authorization: Bearer <token>` added; nothing else changes (the
// Host and Origin the suite sends reach the host as sent, so its DNS-rebinding checks are
// the host's own). There is no mode of the host without a credential.
//
//   node proxy.mjs UPSTREAM_URL TOKEN_FILE   prints "listening PORT" once it listens
import http from "node:http";
import { readFileSync } from "node:fs";

const [upstream, tokenFile] = process.argv.slice(2);
if (!upstream || !tokenFile) {
  console.error("usage: node proxy.mjs UPSTREAM_URL TOKEN_FILE");
  process.exit(2);
}
const target = new URL(upstream);
const token = readFileSync(tokenFile, "utf8").trim();

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const out = http.request(
    {
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers,
    },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      res.flushHeaders();
      up.pipe(res);
    },
  );
  out.on("error", (e) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end(`proxy: ${e.message}`);
  });
  // A client that hangs up (an SSE stream closed) ends the upstream request too.
  res.on("close", () => out.destroy());
  req.pipe(out);
});
server.listen(0, "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
