#!/usr/bin/env node
// SPDX-License-Identifier: BSD-2-Clause
// s3fault.js - a fault-injecting HTTP proxy in front of the S3 server
// (radosgw), for the retry tests (tests/bats/s3-faults.bats, s3-rgw.bats).
// Node's http module only.
//
//   node s3fault.js UPSTREAM_PORT RULES [RELEASE_FILE]
//
// Listens on an ephemeral loopback port and prints "listening on
// 127.0.0.1:PORT".  Every request goes to 127.0.0.1:UPSTREAM_PORT unless a
// rule takes it.  RULES is a comma-separated list of MATCH:FAULT:COUNT,
// applied to the first COUNT requests that match, in order:
//   MATCH  a method, optionally with "?TEXT": the query must contain TEXT
//          (PUT?partNumber=2, GET, POST?uploads)
//   FAULT  an HTTP status (500, 503, 400, 403...): answered here with an S3
//          error document, the request body read and dropped;
//          "cut": forwarded, but the connection is destroyed after half of
//          the answer's body has been relayed;
//          "reset": the connection is destroyed at once;
//          "200error": answered 200 with an S3 error document (as S3 may
//          answer a CompleteMultipartUpload);
//          "flip": forwarded with the first byte of the request body
//          inverted (same length: only a payload hash can tell);
//          "norange": forwarded without its Range header, so the
//          upstream answers 200 with the whole object (as an S3 server
//          that ignores Range may: HTTP allows it); the request signed
//          the Range header, so it is signed again here (SigV4, as
//          AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION say);
//          "norangeflip": the same, with the first byte of the answer's
//          body inverted;
//          "pass": forwarded as it is (a rule that only counts, so that
//          the next rule takes a later request: POST?delete:pass:1,
//          POST?delete:hold:1 holds the second DeleteObjects);
//          "hold": logged, then held (neither forwarded nor answered)
//          until RELEASE_FILE exists, then forwarded: the client waits on
//          a request in flight for as long as the test wants, and the
//          test sees the hold in the log ("-> hold") before it acts
// Every request is logged to stderr as "METHOD URL -> what [range=R]
// inflight=N": R its Range header, N the requests in progress at its
// start, itself included.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');

const upstream = Number(process.argv[2]);
const rules = (process.argv[3] || '')
  .split(',')
  .filter(Boolean)
  .map(r => {
    const [match, fault, count] = r.split(':');
    const [method, query] = match.split('?');
    return { method, query: query || '', fault, left: Number(count || 1) };
  });
const release = process.argv[4] || '';
const codes = { 400: 'InvalidArgument', 403: 'AccessDenied', 404: 'NoSuchKey', 405: 'MethodNotAllowed', 429: 'SlowDown',
                500: 'InternalError', 501: 'NotImplemented', 503: 'SlowDown' };

function ruleFor(req) {
  const q = req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '';
  for (const r of rules)
    if (r.left > 0 && r.method === req.method && q.includes(r.query)) {
      r.left--;
      return r;
    }
  return null;
}

let inflight = 0;

const server = http.createServer((req, res) => {
  const rule = ruleFor(req);
  const what = rule ? rule.fault : 'forwarded';
  inflight++;
  res.on('close', () => inflight--);
  const range = req.headers.range ? ` range=${req.headers.range}` : '';
  process.stderr.write(`${req.method} ${req.url} -> ${what}${range} inflight=${inflight}\n`);
  if (rule && rule.fault === 'reset') {
    req.socket.destroy();
    return;
  }
  if (rule && rule.fault === 'hold') {
    req.pause();
    const poll = setInterval(() => {
      if (!release || !fs.existsSync(release)) return;
      clearInterval(poll);
      forward(req, res, null);
    }, 20);
    res.on('close', () => clearInterval(poll));
    return;
  }
  if (rule && (rule.fault === 'norange' || rule.fault === 'norangeflip')) {
    req.headers = resigned(req);
    forward(req, res, rule.fault === 'norangeflip' ? rule : null);
    return;
  }
  if (rule && rule.fault !== 'cut' && rule.fault !== 'flip' && rule.fault !== 'pass') {
    req.resume();
    req.on('end', () => {
      const status = rule.fault === '200error' ? 200 : Number(rule.fault);
      const code = codes[status] || 'InternalError';
      res.writeHead(status, { 'Content-Type': 'application/xml' });
      res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code>` +
              `<Message>injected by s3fault.js</Message></Error>`);
    });
    return;
  }
  forward(req, res, rule && rule.fault !== 'pass' ? rule : null);
});

// resigned: REQ's headers (a GET without a body) for the same request without
// its Range header: host, date and payload hash signed anew with SigV4.
function resigned(req) {
  const hmac = (key, text) => crypto.createHmac('sha256', key).update(text).digest();
  const hex = text => crypto.createHash('sha256').update(text).digest('hex');
  const region = process.env.AWS_REGION || 'us-east-1';
  const date = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
  const day = date.slice(0, 8);
  const [path, query = ''] = req.url.split('?');
  const canonQuery = query.split('&').filter(Boolean)
    .map(kv => kv.includes('=') ? kv : kv + '=').sort().join('&');
  const headers = { host: req.headers.host, 'x-amz-content-sha256': hex(''), 'x-amz-date': date };
  const names = Object.keys(headers).sort();
  const canon = [req.method, path, canonQuery, names.map(n => `${n}:${headers[n]}\n`).join(''),
                 names.join(';'), headers['x-amz-content-sha256']].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', date, scope, hex(canon)].join('\n');
  let key = hmac('AWS4' + process.env.AWS_SECRET_ACCESS_KEY, day);
  for (const part of [region, 's3', 'aws4_request']) key = hmac(key, part);
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${process.env.AWS_ACCESS_KEY_ID}/${scope}, ` +
                          `SignedHeaders=${names.join(';')}, Signature=${hmac(key, toSign).toString('hex')}`;
  return headers;
}

// forward: REQ relayed to the upstream and its answer back, as RULE ("cut",
// "flip", "norangeflip" or none) says; an upstream that cannot be reached (killed) drops
// the client's connection, as a dead server would.
function forward(req, res, rule) {
  const up = http.request({ host: '127.0.0.1', port: upstream, method: req.method, path: req.url,
                            headers: req.headers }, upres => {
    res.writeHead(upres.statusCode, upres.headers);
    if (!rule || rule.fault === 'flip') {
      upres.pipe(res);
      return;
    }
    if (rule.fault === 'norangeflip') {
      flipFirst(upres, res);
      return;
    }
    const half = Math.floor(Number(upres.headers['content-length'] || 0) / 2);
    let sent = 0;
    upres.on('data', chunk => {
      if (sent >= half) return;
      const part = chunk.subarray(0, Math.max(0, half - sent));
      sent += part.length;
      res.write(part);
      if (sent >= half) {
        upres.destroy();
        res.socket.destroy();
      }
    });
  });
  up.on('error', () => req.socket.destroy());
  if (!rule || rule.fault !== 'flip') {
    req.pipe(up);
    return;
  }
  flipFirst(req, up);
}

// flipFirst: FROM relayed to TO with its first byte inverted (the same
// length: only a digest can tell).
function flipFirst(from, to) {
  let first = true;
  from.on('data', chunk => {
    if (first && chunk.length) {
      chunk = Buffer.from(chunk);
      chunk[0] ^= 0xff;
      first = false;
    }
    to.write(chunk);
  });
  from.on('end', () => to.end());
}

server.listen(0, '127.0.0.1', () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
