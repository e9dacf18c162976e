# Regenerates the accuracy tables from validate_measured's JSON. Run from the repository root:
#   build/bench/validate_measured --json | python3 bench/update_readme_accuracy.py
# It rewrites the text between <!-- accuracy-table:start --> and <!-- accuracy-table:end -->
#   - in docs/validation.md: the full table (MAPE per group, every run, the unsupported runs);
#   - in README.md: the headline (MAPE per group, all supported, "N of M within 15%").
# Both files must already hold the two markers; nothing is written unless both do.
import json
import sys

START = '<!-- accuracy-table:start -->'
END = '<!-- accuracy-table:end -->'


def group_table(d, rows):
    counts = {}
    for r in rows:
        counts[r['group']] = counts.get(r['group'], 0) + 1
    out = ['| group | runs | MAPE |', '|---|---:|---:|']
    for g in sorted(d['mape_by_group']):
        out.append(f"| {g} | {counts[g]} | {100*d['mape_by_group'][g]:.2f}% |")
    out.append(f"| **all supported** | **{d['supported']}** | **{100*d['mape']:.2f}%** |")
    out.append('')
    return out


def full_table(d, rows, sup):
    out = group_table(d, sup)
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
        if 'predicted_s' not in r:
            out.append(f"- `{r['id']}`: {r['status']}")
    out.append('')
    out.append('</details>')
    return out


def headline_table(d, sup):
    out = group_table(d, sup)
    out.append(f"{d['within_15pct']} of {d['supported']} within 15%.")
    return out


def replace_between_markers(path, lines):
    text = open(path).read()
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        sys.exit(f"{path}: needs exactly one '{START}' followed by one '{END}'")
    start = text.index(START) + len(START)
    end = text.index(END)
    return text[:start] + '\n' + '\n'.join(lines) + '\n' + text[end:]


def main():
    d = json.load(sys.stdin)
    rows = d['rows']
    sup = [r for r in rows if 'predicted_s' in r]
    updates = {
        'docs/validation.md': replace_between_markers('docs/validation.md', full_table(d, rows, sup)),
        'README.md': replace_between_markers('README.md', headline_table(d, sup)),
    }
    for path, text in updates.items():
        open(path, 'w').write(text)
        print(f"updated {path}", file=sys.stderr)


if __name__ == '__main__':
    main()
