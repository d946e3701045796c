/* Helpers the e2e tests share. */
'use strict';
const net = require('net');

// a TCP port free on 127.0.0.1 now, for a daemon's --listen
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => { const p = srv.address().port; srv.close(() => resolve(p)); });
  });
}

module.exports = { freePort };
