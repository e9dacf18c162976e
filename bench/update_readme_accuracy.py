# Regenerates the accuracy tables from `simrun accuracy --json` (DESIGN.md "Accuracy report") on
# the shipped yardstick. Run from the repository root:
#   build/cli/simrun accuracy --json | python3 bench/update_readme_accuracy.py
# It rewrites the text between <!-- accuracy-table:start --> and <!-- accuracy-table:end -->
#   - in docs/validation.md: the full table (MAPE per group, every run, the unsupported runs);
#   - in README.md: the headline (MAPE per group, all supported, "N of M within 15%").
# Both files must already hold the two markers; nothing is written unless both do.
import json
import sys

START = '<!-- accuracy-table:start -->'
END = '<!-- accuracy-table:end -->'


def group_table(d):
    out = ['| group | runs | MAPE |', '|---|---:|---:|']
    for g, v in sorted(d['groups'].items()):
        if v['runs'] > 0:
            out.append(f"| {g} | {v['runs']} | {v['mape_pct']:.2f}% |")
    s = d['summary']
    out.append(f"| **all supported** | **{s['supported']}** | **{s['mape_pct']:.2f}%** |")
    out.append('')
    return out


def full_table(d, sup):
    s = d['summary']
    out = group_table(d)
    out.append(f"{s['within_15pct']} of {s['supported']} within 15%; predicted not to fit: {s['not_fitting']}.")
    out.append('')
    out.append('<details><summary>Every run (predicted vs reference step time)</summary>')
    out.append('')
    out.append('| id | group | predicted (s) | reference (s) | error |')
    out.append('|---|---|---:|---:|---:|')
    for r in sup:
        out.append(f"| `{r['id']}` | {r['group']} | {r['predicted_s']:.3f} | {r['reference_s']:.3f} ({r['reference_kind']}) | {r['error_pct']:+.1f}% |")
    out.append('')
    out.append('Listed as unsupported, not dropped:')
    out.append('')
    for r in d['runs']:
        if r['status'] != 'ok':
            out.append(f"- `{r['id']}`: {r['status']}")
    out.append('')
    out.append('</details>')
    return out


def headline_table(d):
    s = d['summary']
    out = group_table(d)
    out.append(f"{s['within_15pct']} of {s['supported']} within 15%.")
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
    sup = [r for r in d['runs'] if r['status'] == 'ok']
    updates = {
        'docs/validation.md': replace_between_markers('docs/validation.md', full_table(d, sup)),
        'README.md': replace_between_markers('README.md', headline_table(d)),
    }
    for path, text in updates.items():
        open(path, 'w').write(text)
        print(f"updated {path}", file=sys.stderr)


if __name__ == '__main__':
    main()
