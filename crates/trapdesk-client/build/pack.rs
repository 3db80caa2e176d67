//! The client's packing, run by `build.rs` after the minifier: byte-pair encoding over every
//! stored file together, so the computer keeps about half the bytes (docs/lua-client.md, "The
//! served client").
//!
//! Every byte value that no client file holds (control characters and bytes 127..255: Lua
//! source is ASCII) stands for a pair of symbols; the pairs are chosen greedily, most frequent
//! first, as in byte-pair encoding, so one byte can stand for a whole phrase such as
//! `local function `. The dictionary (`UNPACK_FILE`) expands a packed file with one
//! `string.gsub`, in native code, so loading costs the computer's Lua thread next to nothing.
//! Each packed file is a one-line stub that unpacks its own text and loads it under its own
//! chunk name, so error positions name the same file and line as the unpacked text would.

/// The unpacker's file, relative to the client's root (`/trapdesk/`).
pub const UNPACK_FILE: &str = "unpack.lua";

/// The shared dictionary: `(code, left, right)` in the order they were made (each expansion
/// only uses earlier codes).
pub struct Dictionary {
    pairs: Vec<[u8; 3]>,
}

/// Byte values Lua source never holds raw and that are safe inside a long bracket string
/// (not `\0`, `\n`, `\r`, which the lexer rewrites, nor tab).
fn spare_codes(texts: &[&[u8]]) -> Vec<u8> {
    let mut used = [false; 256];
    for t in texts {
        for &b in *t {
            used[b as usize] = true;
        }
    }
    (1u8..=255)
        .filter(|&b| !(32..127).contains(&b) && !matches!(b, b'\t' | b'\n' | b'\r'))
        .filter(|&b| !used[b as usize])
        .collect()
}

/// Encodes `texts` together: returns the dictionary and each text encoded.
pub fn encode(texts: &[&[u8]]) -> (Dictionary, Vec<Vec<u8>>) {
    let mut codes = spare_codes(texts).into_iter();
    let mut seqs: Vec<Vec<u8>> = texts.iter().map(|t| t.to_vec()).collect();
    let mut pairs = Vec::new();
    let mut counts = vec![0u32; 65536];
    loop {
        counts.iter_mut().for_each(|c| *c = 0);
        for s in &seqs {
            for w in s.windows(2) {
                counts[(w[0] as usize) << 8 | w[1] as usize] += 1;
            }
        }
        let Some((best, &n)) = counts.iter().enumerate().max_by_key(|(_, c)| **c) else {
            break;
        };
        // A pair costs three bytes in the dictionary: worth it only when it comes often.
        if n < 8 {
            break;
        }
        let Some(code) = codes.next() else { break };
        let (a, b) = ((best >> 8) as u8, (best & 0xff) as u8);
        for s in &mut seqs {
            let mut out = Vec::with_capacity(s.len());
            let mut i = 0;
            while i < s.len() {
                if i + 1 < s.len() && s[i] == a && s[i + 1] == b {
                    out.push(code);
                    i += 2;
                } else {
                    out.push(s[i]);
                    i += 1;
                }
            }
            *s = out;
        }
        pairs.push([code, a, b]);
    }
    (Dictionary { pairs }, seqs)
}

/// `bytes` as a Lua long bracket string literal whose closing bracket it does not hold.
pub fn long_string(bytes: &[u8]) -> Vec<u8> {
    let mut level = 0;
    loop {
        let close = [b"]".as_slice(), &b"=".repeat(level), b"]"].concat();
        let mut joined = bytes.to_vec();
        joined.extend_from_slice(&close);
        let first = joined
            .windows(close.len())
            .position(|w| w == close.as_slice());
        if first == Some(bytes.len()) {
            let mut out = [b"[".as_slice(), &b"=".repeat(level), b"["].concat();
            // The lexer skips a newline right after the opening bracket.
            if bytes.first() == Some(&b'\n') {
                out.push(b'\n');
            }
            out.extend_from_slice(bytes);
            out.extend_from_slice(&close);
            return out;
        }
        level += 1;
    }
}

impl Dictionary {
    /// The dictionary's name: FNV-1a over its pairs, in hex. A client upgraded in place (new
    /// files, no reboot) has another dictionary, and so another name.
    pub fn hash(&self) -> String {
        let mut h: u32 = 0x811c_9dc5;
        for b in self.pairs.iter().flatten() {
            h ^= u32::from(*b);
            h = h.wrapping_mul(0x0100_0193);
        }
        format!("{h:08x}")
    }

    /// The unpacker: returns a function from packed text to plain text.
    pub fn unpacker(&self) -> Vec<u8> {
        let table: Vec<u8> = self.pairs.iter().flatten().copied().collect();
        // The codes as a class of ranges, in decimal escapes: Lua tests a class member by
        // member, so one of 150 single bytes made `gsub` 60 ms for the whole client on
        // CraftOS-PC. A byte in a range that is no code has no entry and stays as it is.
        let mut codes: Vec<u8> = self.pairs.iter().map(|p| p[0]).collect();
        codes.sort_unstable();
        let mut class = String::new();
        let mut i = 0;
        while i < codes.len() {
            let mut j = i;
            while j + 1 < codes.len() && codes[j + 1] == codes[j] + 1 {
                j += 1;
            }
            if j > i {
                class.push_str(&format!("\\{}-\\{}", codes[i], codes[j]));
            } else {
                class.push_str(&format!("\\{}", codes[i]));
            }
            i = j + 1;
        }
        let mut out = b"-- trapdesk: expands the client's packed files (built by build/pack.rs).\n\
local d,t="
            .to_vec();
        out.extend_from_slice(&long_string(&table));
        out.extend_from_slice(
            b",{}\n\
for i=1,#d,3 do\n\
local c,a,b=d:sub(i,i),d:sub(i+1,i+1),d:sub(i+2,i+2)\n\
t[c]=(t[a] or a)..(t[b] or b)\n\
end\n",
        );
        out.extend_from_slice(format!("local p=\"[{class}]\"\n").as_bytes());
        // Kept for the rest of the boot under the dictionary's hash (see `stub`).
        out.extend_from_slice(
            format!(
                "local function f(s) return (s:gsub(p,t)) end\n\
local c=rawget(_G,\"trapdeskUnpack\") or {{}}\n\
c[\"{}\"]=f\n\
rawset(_G,\"trapdeskUnpack\",c)\n\
return f\n",
                self.hash()
            )
            .as_bytes(),
        );
        out
    }
}

/// The stored form of client file `rel` (relative to the root): its kept header lines as they
/// are, then one line that unpacks `packed` (the file's whole minified text, header lines
/// blanked) and runs it under the file's own chunk name with the caller's environment and
/// arguments. `dict` is the dictionary's [`Dictionary::hash`].
pub fn stub(rel: &str, header: &[u8], packed: &[u8], dict: &str) -> Vec<u8> {
    let mut out = header.to_vec();
    // The unpacker a file of this client loaded earlier in this boot, else from its file:
    // running `unpack.lua` again for every module cost about 1.5 ms each on CraftOS-PC.
    out.extend_from_slice(
        format!(
            "local u=rawget(_G,\"trapdeskUnpack\") u=u and u[\"{dict}\"] \
return assert(load((u or dofile(\"/trapdesk/{UNPACK_FILE}\"))("
        )
        .as_bytes(),
    );
    out.extend_from_slice(&long_string(packed));
    out.extend_from_slice(
        format!(
            "),debug and debug.getinfo and debug.getinfo(1,\"S\").source or \"@/trapdesk/{rel}\",\"t\",_ENV))(...)\n"
        )
        .as_bytes(),
    );
    out
}
