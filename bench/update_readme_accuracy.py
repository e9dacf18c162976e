# Regenerates README.md's accuracy table from validate_measured's JSON:
#   build/bench/validate_measured --json | python3 bench/update_readme_accuracy.py
import json, sys, re
d = json.load(sys.stdin)
rows = d['rows']
sup = [r for r in rows if 'predicted_s' in r]
counts = {}
for r in sup: counts[r['group']] = counts.get(r['group'], 0) + 1
out = ['| group | runs | MAPE |', '|---|---:|---:|']
for g in sorted(d['mape_by_group']):
    out.append(f"| {g} | {counts[g]} | {100*d['mape_by_group'][g]:.2f}% |")
out.append(f"| **all supported** | **{d['supported']}** | **{100*d['mape']:.2f}%** |")
out.append('')
out.append(f"{d['within_15pct']} of {d['supported']} within 15%; predicted not to fit: {len(d['not_fitting'])}.")
out.append('')
out.append('<details><summary>Every run (predicted vs reference step time)</summary>')
out.append('')
out.append('| id | group | predicted (s) | reference (s) | error |')
out.append('|---|---|---:|---:|---:|')
for r in sup:
    out.append(f"| `{r['id']}` | {r['group']} | {r['predicted_s']:.3f} | {r['reference_s']:.3f} ({r['reference']}) | {100*r['error']:+.1f}% |")
out.append('')
out.append('Listed as unsupported, not dropped:')
out.append('')
for r in rows:
    if 'predicted_s' not in r: out.append(f"- `{r['id']}`: {r['status']}")
out.append('')
out.append('</details>')
text = open('README.md').read()
start = text.index('<!-- accuracy-table:start -->') + len('<!-- accuracy-table:start -->')
end = text.index('<!-- accuracy-table:end -->')
open('README.md', 'w').write(text[:start] + '\n' + '\n'.join(out) + '\n' + text[end:])
