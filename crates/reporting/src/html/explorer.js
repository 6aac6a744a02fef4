// chunkbench report explorer: sortable tables and the per-question view. Reads the JSON in
// #chunkbench-data (written by reporting::html). No network, no dependencies.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('chunkbench-data').textContent);
  var enc = new TextEncoder();
  var dec = new TextDecoder('utf-8', { fatal: true });
  var LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  var byUid = {};
  D.cells.forEach(function (c) { byUid[c.uid] = c; });
  // A row's value of a registered metric (D.metrics: [name, label] in the order of row.m).
  var METRIC_AT = {};
  D.metrics.forEach(function (m, i) { METRIC_AT[m[0]] = i; });
  function metric(row, name) {
    var v = row.m[METRIC_AT[name]];
    return v === undefined ? null : v;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmt(x, d) { return (x === null || x === undefined) ? '–' : Number(x).toFixed(d); }

  // ---- sortable tables -------------------------------------------------------------------
  function sortTable(th) {
    var table = th.closest('table');
    var idx = Array.prototype.indexOf.call(th.parentNode.children, th);
    var num = th.classList.contains('num');
    var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
    th.parentNode.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var key = function (r) {
      var td = r.cells[idx];
      if (num) { var v = td.getAttribute('data-v'); return v === null ? null : parseFloat(v); }
      return td.textContent;
    };
    var coll = new Intl.Collator(undefined, { numeric: true });
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === null && y === null) return 0;
      if (x === null) return 1; // absent values last in either direction
      if (y === null) return -1;
      return dir * (num ? x - y : coll.compare(x, y));
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll('table.sortable th').forEach(function (th) {
    th.addEventListener('click', function () { sortTable(th); });
    th.addEventListener('keydown', function (e) { if (e.key === 'Enter') sortTable(th); });
  });
  document.querySelectorAll('table.sortable tbody tr[data-cell]').forEach(function (tr) {
    tr.tabIndex = 0;
    tr.addEventListener('keydown', function (e) { if (e.key === 'Enter') tr.click(); });
    tr.addEventListener('click', function () {
      var uid = tr.getAttribute('data-cell');
      if (!byUid[uid]) return;
      state.cell = uid;
      state.beside = byUid[uid].pair || '';
      $('cell').value = uid;
      fillBeside();
      update(true);
      document.getElementById('explorer').scrollIntoView();
    });
  });

  // ---- texts: exact byte slices of the documents ----------------------------------------
  var segCache = {};
  function segsOf(dsi, doc) {
    var key = dsi + ':' + doc;
    if (!segCache[key]) {
      segCache[key] = (D.datasets[dsi].segs[doc] || []).map(function (s) {
        return { start: s[0], bytes: enc.encode(s[1]) };
      });
    }
    return segCache[key];
  }
  // The bytes [s, e) of document `doc` of dataset `dsi`, or null when the page lacks them.
  function sliceBytes(dsi, doc, s, e) {
    var segs = segsOf(dsi, doc);
    var lo = 0, hi = segs.length - 1, found = -1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (segs[mid].start <= s) { found = mid; lo = mid + 1; } else { hi = mid - 1; }
    }
    if (found < 0) return null;
    var seg = segs[found];
    if (e > seg.start + seg.bytes.length || e < s) return null;
    return seg.bytes.subarray(s - seg.start, e - seg.start);
  }
  function sliceText(dsi, doc, s, e) {
    var b = sliceBytes(dsi, doc, s, e);
    if (!b) return null;
    try { return dec.decode(b); } catch (err) { return null; }
  }

  // Renders `bytes` (a passage) into `node` with marks: `layers` are byte ranges relative to
  // the passage ({s, e, cls, title}); `answers` are marked wherever answer recall finds them
  // (the trimmed answer as a case-insensitive substring).
  function renderMarked(node, bytes, layers, answers) {
    var text = dec.decode(bytes);
    var ranges = [];
    layers.forEach(function (l) {
      var s = Math.max(0, l.s), e = Math.min(bytes.length, l.e);
      if (e <= s) return;
      try {
        ranges.push({ a: dec.decode(bytes.subarray(0, s)).length,
                      b: dec.decode(bytes.subarray(0, e)).length, cls: l.cls, title: l.title });
      } catch (err) { /* not on a character boundary: not marked */ }
    });
    answers.forEach(function (ans) {
      var t = (ans || '').trim();
      if (!t.length) return;
      var re;
      try {
        re = new RegExp(t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'giu');
      } catch (err) { return; }
      var m;
      while ((m = re.exec(text)) !== null) {
        if (m[0].length === 0) { re.lastIndex++; continue; }
        ranges.push({ a: m.index, b: m.index + m[0].length, cls: 'ans', title: 'answer text' });
      }
    });
    if (!ranges.length) { node.textContent = text; return; }
    var cuts = [0, text.length];
    ranges.forEach(function (r) { cuts.push(r.a, r.b); });
    cuts = cuts.filter(function (v, i, arr) { return arr.indexOf(v) === i; })
               .sort(function (x, y) { return x - y; });
    for (var i = 0; i + 1 < cuts.length; i++) {
      var a = cuts[i], b = cuts[i + 1];
      var piece = text.slice(a, b);
      var cls = [], titles = [];
      ranges.forEach(function (r) {
        if (r.a <= a && b <= r.b) {
          if (cls.indexOf(r.cls) < 0) cls.push(r.cls);
          if (r.title && titles.indexOf(r.title) < 0) titles.push(r.title);
        }
      });
      if (cls.length) {
        var m = el('mark', cls.join(' '), piece);
        if (titles.length) m.title = titles.join('\n');
        node.appendChild(m);
      } else {
        node.appendChild(document.createTextNode(piece));
      }
    }
  }

  // ---- questions and rows ---------------------------------------------------------------
  function questionOf(cell, row) {
    return typeof row.q === 'number' ? D.datasets[cell.ds].questions[row.q] : null;
  }
  function qidOf(cell, row) {
    var q = questionOf(cell, row);
    return q ? q.id : String(row.q);
  }
  var rowIndex = {};
  function rowByQid(cell, qid) {
    if (!rowIndex[cell.uid]) {
      var m = {};
      cell.rows.forEach(function (r, i) { m[qidOf(cell, r)] = i; });
      rowIndex[cell.uid] = m;
    }
    var i = rowIndex[cell.uid][qid];
    return i === undefined ? null : cell.rows[i];
  }
  function correct(row) { return row.co === 1; }
  function outcome(row) {
    if (row.co === null || row.co === undefined) return 'unread';
    if (row.co === 1) return 'correct';
    if (row.inv === 1) return 'invalid';
    if (row.ti > 1) return 'tie';
    return 'wrong';
  }
  // Lost: the paired cell right and this one wrong (McNemar's b); gained: the reverse (c).
  function flipOf(cell, row) {
    if (!cell.pair || !byUid[cell.pair]) return null;
    if (row.co === null || row.co === undefined) return null;
    var other = rowByQid(byUid[cell.pair], qidOf(cell, row));
    if (!other || other.co === null || other.co === undefined) return null;
    if (correct(other) && !correct(row)) return 'lost';
    if (!correct(other) && correct(row)) return 'gained';
    return 'same';
  }

  // ---- state ----------------------------------------------------------------------------
  var state = { cell: D.cells.length ? D.cells[0].uid : '', beside: '', outcome: 'all',
                flip: 'all', search: '', qid: null };
  var shown = [];
  var $ = function (id) { return document.getElementById(id); };

  // The view named by the URL hash (cell, beside, q, outcome, flip, search); a pair that
  // cannot be decoded or names no such cell or filter is ignored.
  function readHash() {
    var h = location.hash.replace(/^#/, '');
    if (h.indexOf('=') < 0) return;
    var allowed = function (id, v) {
      return Array.prototype.some.call($(id).options, function (o) { return o.value === v; });
    };
    h.split('&').forEach(function (kv) {
      var i = kv.indexOf('=');
      if (i < 0) return;
      var k, v;
      try {
        k = decodeURIComponent(kv.slice(0, i));
        v = decodeURIComponent(kv.slice(i + 1).replace(/\+/g, ' '));
      } catch (err) { return; }
      if (k === 'cell' && byUid[v]) state.cell = v;
      else if (k === 'beside') state.beside = byUid[v] ? v : '';
      else if (k === 'q') state.qid = v;
      else if ((k === 'outcome' || k === 'flip') && allowed(k, v)) state[k] = v;
      else if (k === 'search') state.search = v;
    });
  }
  function writeHash() {
    var parts = ['cell=' + encodeURIComponent(state.cell)];
    if (state.beside) parts.push('beside=' + encodeURIComponent(state.beside));
    if (state.qid !== null) parts.push('q=' + encodeURIComponent(state.qid));
    if (state.outcome !== 'all') parts.push('outcome=' + state.outcome);
    if (state.flip !== 'all') parts.push('flip=' + state.flip);
    if (state.search) parts.push('search=' + encodeURIComponent(state.search));
    try {
      history.replaceState(null, '', '#' + parts.join('&'));
    } catch (err) { /* a browser that refuses history on file: URLs keeps working without it */ }
  }

  function fillCells() {
    var sel = $('cell');
    sel.textContent = '';
    D.cells.forEach(function (c) {
      var o = el('option', null, c.label + (c.base && !c.side ? ' (baseline)' : ''));
      o.value = c.uid;
      sel.appendChild(o);
    });
    sel.value = state.cell;
  }
  function fillBeside() {
    var sel = $('beside');
    sel.textContent = '';
    var none = el('option', null, '(none)');
    none.value = '';
    sel.appendChild(none);
    var cell = byUid[state.cell];
    D.cells.forEach(function (c) {
      if (!cell || c.uid === cell.uid || c.ds !== cell.ds) return;
      var o = el('option', null, c.label + (c.uid === cell.pair ? ' (paired)' : ''));
      o.value = c.uid;
      sel.appendChild(o);
    });
    if (!byUid[state.beside] || state.beside === state.cell ||
        (cell && byUid[state.beside].ds !== cell.ds)) {
      state.beside = '';
    }
    sel.value = state.beside;
  }

  function matches(cell, row) {
    var oc = outcome(row);
    var recall = metric(row, 'recall');
    if (state.outcome === 'missed') return recall !== null && recall < 1 && searchOk(cell, row) && flipOk(cell, row);
    if (state.outcome === 'hit') return recall !== null && recall >= 1 && searchOk(cell, row) && flipOk(cell, row);
    if (state.outcome === 'wrong' && !(oc === 'wrong' || oc === 'tie' || oc === 'invalid')) return false;
    if (state.outcome !== 'all' && state.outcome !== 'wrong' && oc !== state.outcome) return false;
    return flipOk(cell, row) && searchOk(cell, row);
  }
  function flipOk(cell, row) {
    if (state.flip === 'all') return true;
    var f = flipOf(cell, row);
    return state.flip === 'discordant' ? (f === 'lost' || f === 'gained') : f === state.flip;
  }
  function searchOk(cell, row) {
    if (!state.search) return true;
    var s = state.search.toLowerCase();
    var q = questionOf(cell, row);
    return (qidOf(cell, row) + ' ' + (q ? q.q : '')).toLowerCase().indexOf(s) >= 0;
  }

  function update(keepQuestion) {
    var cell = byUid[state.cell];
    var list = $('qlist');
    list.textContent = '';
    shown = [];
    if (!cell) { $('counts').textContent = 'No cells.'; $('detail').textContent = ''; return; }
    var lost = 0, gained = 0;
    cell.rows.forEach(function (r) {
      var f = flipOf(cell, r);
      if (f === 'lost') lost++;
      if (f === 'gained') gained++;
      if (matches(cell, r)) shown.push(r);
    });
    var counts = $('counts');
    counts.textContent = '';
    counts.appendChild(document.createTextNode('Showing '));
    counts.appendChild(el('b', null, shown.length)).id = 'count-shown';
    counts.appendChild(document.createTextNode(' of ' + cell.rows.length + ' questions.'));
    if (cell.pair && byUid[cell.pair]) {
      counts.appendChild(document.createTextNode(' Against ' + byUid[cell.pair].label + ': lost '));
      counts.appendChild(el('b', 'no', lost)).id = 'flip-lost';
      counts.appendChild(document.createTextNode(', gained '));
      counts.appendChild(el('b', 'ok', gained)).id = 'flip-gained';
      counts.appendChild(document.createTextNode(' (McNemar b, c).'));
      if (cell.bc && (cell.bc[0] !== lost || cell.bc[1] !== gained)) {
        counts.appendChild(el('span', 'missing', ' The statistics counted b = ' + cell.bc[0] +
          ', c = ' + cell.bc[1] + ': the rows and the summary disagree.'));
      }
    } else if (cell.base) {
      counts.appendChild(document.createTextNode(' This is a baseline cell: the flip filter applies to the cells compared with it.'));
    }
    var frag = document.createDocumentFragment();
    shown.forEach(function (r, i) {
      var li = el('li');
      li.setAttribute('data-qid', qidOf(cell, r));
      var oc = outcome(r);
      var mark = { correct: ['✓', 'ok'], wrong: ['✗', 'no'], tie: ['=', 'no'],
                   invalid: ['!', 'no'], unread: ['·', 'na'] }[oc];
      var m = el('span', 'mark ' + mark[1], mark[0]);
      m.title = oc;
      li.appendChild(m);
      li.appendChild(el('span', 'qid', qidOf(cell, r)));
      var q = questionOf(cell, r);
      li.appendChild(el('span', 'qtext', q ? q.q : ''));
      var f = flipOf(cell, r);
      if (f === 'lost' || f === 'gained') li.appendChild(el('span', 'flip ' + f, f));
      li.addEventListener('click', function () { select(i); });
      frag.appendChild(li);
    });
    list.appendChild(frag);
    var at = -1;
    if (keepQuestion && state.qid !== null) {
      for (var i = 0; i < shown.length; i++) if (qidOf(cell, shown[i]) === state.qid) { at = i; break; }
    }
    select(at >= 0 ? at : (shown.length ? 0 : -1), true);
  }

  function select(i, noScroll) {
    var cell = byUid[state.cell];
    var items = $('qlist').children;
    for (var j = 0; j < items.length; j++) items[j].classList.toggle('sel', j === i);
    if (i < 0 || !shown[i]) {
      state.qid = null;
      $('detail').textContent = shown.length ? '' : 'No question matches the filters.';
      writeHash();
      return;
    }
    state.qid = qidOf(cell, shown[i]);
    if (!noScroll && items[i] && items[i].scrollIntoView) items[i].scrollIntoView({ block: 'nearest' });
    renderDetail(cell, shown[i]);
    writeHash();
  }

  // ---- the question view ----------------------------------------------------------------
  function renderDetail(cell, row) {
    var detail = $('detail');
    detail.textContent = '';
    var ds = D.datasets[cell.ds];
    var q = questionOf(cell, row);
    var head = el('div', 'qhead');
    var meta = 'question ' + qidOf(cell, row) + ' · dataset ' + ds.name + (q && q.s ? ' · ' + q.s : '');
    head.appendChild(el('div', 'meta', meta));
    if (q) {
      head.appendChild(el('div', 'qtitle', q.q));
      if (q.o.length) {
        var ol = el('ol', 'options');
        q.o.forEach(function (o, i) {
          var li = el('li', i === q.g ? 'gold' : '', LETTERS[i] + '. ' + o + (i === q.g ? '  ✓ gold' : ''));
          ol.appendChild(li);
        });
        head.appendChild(ol);
      } else if (q.a.length) {
        head.appendChild(el('div', 'kv', 'retrieval only; answers: ' + q.a.join(' | ')));
      }
      if (q.ev.length) {
        var det = el('details', 'evidence');
        det.appendChild(el('summary', null, 'gold evidence (' + q.ev.length + ' span' + (q.ev.length > 1 ? 's' : '') + ')'));
        q.ev.forEach(function (ev) { det.appendChild(passageNode(cell.ds, ev, null, q, null, 'evidence')); });
        head.appendChild(det);
      }
    } else {
      head.appendChild(el('div', 'missing', ds.note ? 'The question text is not shown (see the note at the top of the page).'
        : 'This question is not in the dataset the page was built from.'));
    }
    detail.appendChild(head);
    var cols = el('div', 'cols');
    var qid = qidOf(cell, row);
    cols.appendChild(cellColumn(cell, row, q));
    if (state.beside && byUid[state.beside]) {
      var other = byUid[state.beside];
      var orow = rowByQid(other, qid);
      if (orow) {
        cols.appendChild(cellColumn(other, orow, q));
      } else {
        var c = el('div', 'cellcol');
        c.appendChild(el('h4', null, other.label));
        c.appendChild(el('div', 'missing', 'This cell has no row for question ' + qid + '.'));
        cols.appendChild(c);
      }
    }
    detail.appendChild(cols);
    // A long passage scrolls to its first mark (evidence first), so a mark is never hidden
    // below the fold of its box.
    detail.querySelectorAll('.ptext').forEach(function (pt) {
      var m = pt.querySelector('mark.ev') || pt.querySelector('mark.anc') || pt.querySelector('mark.ans');
      if (m && m.offsetTop > pt.clientHeight - 40) pt.scrollTop = m.offsetTop - 40;
    });
  }

  function cellColumn(cell, row, q) {
    var col = el('div', 'cellcol');
    col.setAttribute('data-cell', cell.uid);
    col.appendChild(el('h4', null, cell.label + (cell.base && !cell.side ? ' (baseline)' : '')));
    var oc = outcome(row);
    var text = {
      correct: '✓ correct', wrong: '✗ wrong', unread: 'not read (retrieval only)',
      tie: '✗ wrong: a tie of ' + row.ti + ' options' + tiedLetters(row), invalid: '✗ wrong: invalid answer'
    }[oc];
    var line = el('div', 'outcome ' + (oc === 'correct' ? 'ok' : oc === 'unread' ? 'na' : 'no'), text);
    var f = flipOf(cell, row);
    if (f === 'lost' || f === 'gained') line.appendChild(el('span', 'flip ' + f, ' ' + f + ' vs paired cell'));
    col.appendChild(line);
    if (row.ch !== null && row.ch !== undefined) {
      var g = q ? q.g : row.g;
      col.appendChild(kv('answer', LETTERS[row.ch] + (g !== null && g !== undefined ? ' (gold ' + LETTERS[g] + ')' : '')));
    }
    if (row.f) col.appendChild(kv('failure stage', row.f));
    col.appendChild(kv('words retrieved', row.w + ' (' + row.uw + ' unique), ' + row.p.length + ' passages'));
    var defined = D.metrics.filter(function (m, i) { return row.m[i] !== null && row.m[i] !== undefined; });
    if (defined.length) {
      col.appendChild(kv('retrieval', defined.map(function (m) {
        return m[1] + ' ' + fmt(row.m[METRIC_AT[m[0]]], 3);
      }).join(' · ')));
    }
    if (row.sc.length) {
      var tb = row.tb || [];
      var t = el('table', 'scores');
      var max = Math.max.apply(null, row.sc.map(function (x) { return Math.abs(x || 0); })) || 1;
      row.sc.forEach(function (s, i) {
        var tr = el('tr');
        tr.appendChild(el('td', null, LETTERS[i]));
        tr.appendChild(el('td', 'num', fmt(s, 4)));
        var bar = el('span', 'bar');
        bar.style.width = Math.round(60 * Math.abs(s || 0) / max) + 'px';
        var td = el('td');
        td.appendChild(bar);
        tr.appendChild(td);
        if (tb.length) tr.appendChild(el('td', 'num', 'tie-break ' + fmt(tb[i], 4)));
        var marks = [];
        if (i === row.ch) marks.push('chosen');
        if (i === (q ? q.g : row.g)) marks.push('gold');
        tr.appendChild(el('td', null, marks.join(', ')));
        t.appendChild(tr);
      });
      var cap = el('div', 'kv', tb.length
        ? 'reader scores per option (ties on the score are broken by the tie-break score: the option\u2019s coverage summed over the passages)'
        : 'reader scores per option');
      col.appendChild(cap);
      col.appendChild(t);
    }
    if (row.rep) {
      col.appendChild(el('div', 'kv', 'reader reply'));
      col.appendChild(el('div', 'reply', row.rep));
    }
    var earBy = {};
    var anchors = row.ear ? D.datasets[cell.ds].anchor_sets[row.ear.an] : [];
    if (row.ear) {
      var st = row.ear.st;
      var box = el('div', 'ear');
      box.appendChild(el('div', null, 'EAR: ' + st[0] + ' question and ' + st[1] +
        ' option anchors; ' + st[2] + ' forms matched (' + (st[3] ? 'exact anchor match' : 'no exact anchor match') +
        '), ' + st[4] + ' occurrences; windows ' + st[5] + ' before dedup, ' +
        st[6] + ' after' + (st[7] ? '; FALLBACK to the retriever’s ranking of parents' : '')));
      if (anchors.length) {
        var ul = el('ul');
        anchors.forEach(function (a) {
          ul.appendChild(el('li', null, a[0] + ' · ' + a[1] + ' “' + a[2] + '” → ' + a[3]));
        });
        box.appendChild(ul);
      }
      col.appendChild(box);
      var recs = D.datasets[cell.ds].ear_passages;
      row.ear.ps.forEach(function (i) { var p = recs[i]; earBy[p[0].join(':')] = p; });
    }
    if (row.nt && row.nt.n.length) {
      var nbox = el('div', 'ear');
      row.nt.n.forEach(function (line) { nbox.appendChild(el('div', null, line)); });
      col.appendChild(nbox);
    }
    row.p.forEach(function (p, i) {
      col.appendChild(passageNode(cell.ds, p, row, q, earBy[p.join(':')] || null, null, i, anchors));
    });
    if (!row.p.length) col.appendChild(el('div', 'kv', 'no passages retrieved'));
    return col;
  }

  // The options sharing the best score (and, where the reader breaks ties, the best
  // tie-break score among those), as ` (A, C)`.
  function tiedLetters(row) {
    if (!row.sc.length) return '';
    var best = Math.max.apply(null, row.sc);
    var top = [];
    row.sc.forEach(function (x, i) { if (x === best) top.push(i); });
    var tb = row.tb || [];
    if (tb.length && top.length > 1) {
      var bestTb = Math.max.apply(null, top.map(function (i) { return tb[i]; }));
      top = top.filter(function (i) { return tb[i] === bestTb; });
    }
    return top.length > 1 ? ' (' + top.map(function (i) { return LETTERS[i]; }).join(', ') + ')' : '';
  }

  function kv(k, v) {
    var d = el('div', 'kv', k + ': ');
    d.appendChild(el('b', null, v));
    return d;
  }

  // One passage (a retrieved one, or gold evidence): header and exact text with marks.
  function passageNode(dsi, p, row, q, ear, kind, i, anchors) {
    var ds = D.datasets[dsi];
    var doc = ds.docs[p[0]], s = p[1], e = p[2];
    var box = el('div', 'passage');
    box.setAttribute('data-doc', doc);
    box.setAttribute('data-start', s);
    box.setAttribute('data-end', e);
    if (kind) box.setAttribute('data-kind', kind);
    var head = el('div', 'phead');
    if (i !== undefined) head.appendChild(document.createTextNode('#' + (i + 1) + ' '));
    head.appendChild(el('span', 'pid', doc + ':' + s + '-' + e));
    var bits = [];
    if (row && row.ps[i] !== undefined) bits.push('score ' + fmt(row.ps[i], 4));
    if (row && row.pw && row.pw[i] !== undefined && row.pw[i] !== null) bits.push(row.pw[i] + ' words');
    if (row && row.nt && row.nt.p[i]) bits.push(row.nt.p[i]);
    var layers = [];
    if (q) {
      q.ev.forEach(function (ev) {
        if (ev[0] === p[0] && ev[1] < e && ev[2] > s) {
          layers.push({ s: ev[1] - s, e: ev[2] - s, cls: 'ev', title: 'gold evidence ' + ds.docs[ev[0]] + ':' + ev[1] + '-' + ev[2] });
        }
      });
      if (row && layers.length) bits.push('holds gold evidence');
    }
    if (ear) {
      // [span, score, [anchor, lexical, date], fallback, window or null, matches]
      var win = ear[4] || [ear[0][1], ear[0][2]];
      if (ear[3]) bits.push('fallback parent');
      else bits.push('EAR score ' + fmt(ear[1], 3) + ' = anchor ' + fmt(ear[2][0], 2) +
        ' · lexical ' + fmt(ear[2][1], 2) + ' · date ' + fmt(ear[2][2], 2) +
        '; window ' + win[0] + '-' + win[1]);
      ear[5].forEach(function (m) {
        var a = (anchors || [])[m[2]];
        var title = (a ? a[0] + ' ' + a[1] + ' “' + a[2] + '”' : 'anchor') + ' ↔ corpus ' + D.corpus_kinds[m[3]];
        layers.push({ s: m[0] - s, e: m[1] - s, cls: 'anc', title: title });
      });
    }
    if (bits.length) head.appendChild(document.createTextNode(' · ' + bits.join(' · ')));
    box.appendChild(head);
    var bytes = sliceBytes(dsi, p[0], s, e);
    var textNode = el('div', 'ptext');
    var ok = false;
    if (bytes) {
      try { dec.decode(bytes); ok = true; } catch (err) { ok = false; }
    }
    if (ok) {
      renderMarked(textNode, bytes, layers, q ? q.a : []);
    } else {
      textNode.className = 'ptext missing';
      textNode.setAttribute('data-missing', '1');
      textNode.textContent = ds.note ? 'text not shown (see the note at the top of the page)'
        : 'text not shown: this span is not in its document';
    }
    box.appendChild(textNode);
    return box;
  }

  // ---- controls ---------------------------------------------------------------------------
  // A comparison opens on its first regressing cell (else the first with discordant pairs),
  // showing the lost and gained questions.
  if (document.body.classList.contains('page-compare') && !location.hash) {
    var reg = document.querySelector('tbody tr.regression[data-cell]');
    var first = reg ? byUid[reg.getAttribute('data-cell')] : null;
    if (!first) first = D.cells.filter(function (c) { return c.bc && c.bc[0] + c.bc[1] > 0; })[0];
    if (first) {
      state.cell = first.uid;
      if (first.bc && first.bc[0] + first.bc[1] > 0) state.flip = 'discordant';
    }
  }
  readHash();
  if (!byUid[state.cell] && D.cells.length) state.cell = D.cells[0].uid;
  if (!state.beside && byUid[state.cell] && !location.hash.match(/beside=/)) state.beside = byUid[state.cell].pair || '';
  fillCells();
  fillBeside();
  $('outcome').value = state.outcome;
  $('flip').value = state.flip;
  $('search').value = state.search;
  $('cell').addEventListener('change', function () {
    state.cell = this.value;
    state.beside = byUid[state.cell].pair || '';
    fillBeside();
    update(true);
  });
  $('beside').addEventListener('change', function () { state.beside = this.value; update(true); });
  $('outcome').addEventListener('change', function () { state.outcome = this.value; update(true); });
  $('flip').addEventListener('change', function () { state.flip = this.value; update(true); });
  $('search').addEventListener('input', function () { state.search = this.value; update(true); });
  document.addEventListener('keydown', function (e) {
    var t = e.target && e.target.tagName;
    if (t === 'INPUT' || t === 'SELECT' || t === 'TEXTAREA' || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key !== 'j' && e.key !== 'k') return;
    var cell = byUid[state.cell];
    if (!cell || !shown.length) return;
    var at = 0;
    for (var i = 0; i < shown.length; i++) if (qidOf(cell, shown[i]) === state.qid) { at = i; break; }
    select(Math.max(0, Math.min(shown.length - 1, at + (e.key === 'j' ? 1 : -1))));
  });
  // A hash set while the page is open (a pasted link, Back) shows its view.
  window.addEventListener('hashchange', function () {
    // A link names the whole view: what it leaves out is the default.
    state.outcome = 'all';
    state.flip = 'all';
    state.search = '';
    state.qid = null;
    var hadBeside = /(^#|&)beside=/.test(location.hash);
    readHash();
    if (!hadBeside && byUid[state.cell]) state.beside = byUid[state.cell].pair || '';
    $('cell').value = state.cell;
    fillBeside();
    $('outcome').value = state.outcome;
    $('flip').value = state.flip;
    $('search').value = state.search;
    update(true);
  });
  // The EAR legend only where some row has EAR records.
  if (!D.cells.some(function (c) { return c.rows.some(function (r) { return r.ear; }); })) {
    var legend = document.querySelector('.hint mark.anc');
    if (legend) legend.remove();
  }
  update(true);
  document.body.setAttribute('data-ready', '1');
  // Milliseconds from the start of navigation until the explorer was usable (benchmarks).
  document.body.setAttribute('data-ready-ms', String(Math.round(performance.now())));
})();
