//! The computer's screen as data: a grid of bytes with colours and a cursor, which the
//! native `term` table (`term.rs`) draws on and the handle reads.

/// The screen and cursor state.
pub(crate) struct Screen {
    pub(super) width: usize,
    pub(super) height: usize,
    pub(super) text: Vec<Vec<u8>>,
    pub(super) fg: Vec<Vec<u8>>,
    pub(super) bg: Vec<Vec<u8>>,
    /// 1-based cursor, may lie off screen (as CC allows).
    pub(super) x: i64,
    pub(super) y: i64,
    /// Current colours as blit hex digits ('0' white .. 'f' black).
    pub(super) text_colour: u8,
    pub(super) back_colour: u8,
    pub(super) blink: bool,
    /// The 16 palette entries as 0xRRGGBB, indexed by blit digit.
    pub(super) palette: [u32; 16],
    /// While a `run_lua` coroutine runs, everything it writes is also appended here.
    pub capture: Option<Vec<u8>>,
}

impl Screen {
    pub(crate) fn new(width: usize, height: usize) -> Self {
        let mut s = Self {
            width: width.max(1),
            height: height.max(1),
            text: Vec::new(),
            fg: Vec::new(),
            bg: Vec::new(),
            x: 1,
            y: 1,
            text_colour: b'0',
            back_colour: b'f',
            blink: false,
            palette: DEFAULT_PALETTE,
            capture: None,
        };
        s.reset();
        s
    }

    /// Blank screen, cursor home, default colours: the state at boot.
    pub(crate) fn reset(&mut self) {
        let (w, h) = (self.width, self.height);
        self.text = vec![vec![b' '; w]; h];
        self.fg = vec![vec![b'0'; w]; h];
        self.bg = vec![vec![b'f'; w]; h];
        self.x = 1;
        self.y = 1;
        self.text_colour = b'0';
        self.back_colour = b'f';
        self.blink = false;
        self.palette = DEFAULT_PALETTE;
        self.capture = None;
    }

    /// The size in cells.
    pub(crate) fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// Changes the size as CC: Tweaked's terminal does: what fits stays where it was, new
    /// cells are blank in the current colours. The cursor stays put (it may now lie off screen).
    pub(crate) fn resize(&mut self, width: usize, height: usize) {
        let (width, height) = (width.max(1), height.max(1));
        let fit = |rows: &mut Vec<Vec<u8>>, fill: u8| {
            rows.truncate(height);
            for r in rows.iter_mut() {
                r.resize(width, fill);
            }
            while rows.len() < height {
                rows.push(vec![fill; width]);
            }
        };
        let (tc, bc) = (self.text_colour, self.back_colour);
        fit(&mut self.text, b' ');
        fit(&mut self.fg, tc);
        fit(&mut self.bg, bc);
        self.width = width;
        self.height = height;
    }

    /// The lines as text, trailing blanks kept (a fixed-size grid).
    pub(crate) fn lines(&self) -> Vec<String> {
        self.text
            .iter()
            .map(|row| row.iter().map(|b| char::from(*b)).collect())
            .collect()
    }

    pub(super) fn put(&mut self, text: &[u8], fg: Option<&[u8]>, bg: Option<&[u8]>) {
        if let Some(c) = self.capture.as_mut() {
            c.extend_from_slice(text);
        }
        for (i, ch) in text.iter().enumerate() {
            let x = self.x + i as i64;
            if self.y >= 1 && self.y <= self.height as i64 && x >= 1 && x <= self.width as i64 {
                let (row, col) = ((self.y - 1) as usize, (x - 1) as usize);
                self.text[row][col] = *ch;
                self.fg[row][col] = fg
                    .and_then(|f| f.get(i).copied())
                    .unwrap_or(self.text_colour);
                self.bg[row][col] = bg
                    .and_then(|b| b.get(i).copied())
                    .unwrap_or(self.back_colour);
            }
        }
        self.x += text.len() as i64;
    }

    pub(super) fn scroll(&mut self, n: i64) {
        let width = self.width;
        for _ in 0..n.unsigned_abs().min(self.height as u64) {
            if n > 0 {
                self.text.remove(0);
                self.fg.remove(0);
                self.bg.remove(0);
                self.text.push(vec![b' '; width]);
                self.fg.push(vec![self.text_colour; width]);
                self.bg.push(vec![self.back_colour; width]);
            } else {
                self.text.pop();
                self.fg.pop();
                self.bg.pop();
                self.text.insert(0, vec![b' '; width]);
                self.fg.insert(0, vec![self.text_colour; width]);
                self.bg.insert(0, vec![self.back_colour; width]);
            }
        }
    }

    pub(super) fn clear_row(&mut self, row: usize) {
        if row < self.height {
            let width = self.width;
            self.text[row] = vec![b' '; width];
            self.fg[row] = vec![self.text_colour; width];
            self.bg[row] = vec![self.back_colour; width];
        }
    }
}

/// CC: Tweaked's default palette (`colours.white` .. `colours.black`), as 0xRRGGBB.
pub(crate) const DEFAULT_PALETTE: [u32; 16] = [
    0xF0F0F0, 0xF2B233, 0xE57FD8, 0x99B2F2, 0xDEDE6C, 0x7FCC19, 0xF2B2CC, 0x4C4C4C, 0x999999,
    0x4C99B2, 0xB266E5, 0x3366CC, 0x7F664C, 0x57A64E, 0xCC4C4C, 0x111111,
];
