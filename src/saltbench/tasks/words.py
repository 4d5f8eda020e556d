"""Words Collection task (docs/tasks.md §7, §8.7; docs/compatibility.md §1.12), a.k.a. "Needles in a
Haystack".

The model lists every needle of one *subject* (numbers, countries, months, capital letters,
professions, weekdays, colors) in a text, in order of appearance, separated by single spaces.
The reference follows the purely lexical rule that reproduces all 300 rows of the paper data:

* ``numbers``: every maximal digit run ``\\d+`` of the raw text (``750 , 000`` → ``750 000``,
  ``3.5`` → ``3 5``, ``35YO`` → ``35``);
* ``capital_letters``: every uppercase character (``str.isupper``), also inside words;
* other subjects: the ``[A-Za-z]+`` tokens of the lower-cased text that belong to the vocabulary
  (so ``May`` the modal verb is a month); multi-word vocabulary entries never match.

Haystacks are generated procedurally from sentence templates and word lists of our own (news-like
sentences about companies, amounts, places and dates) with look-alike distractors; the reference is
always computed from the final text with :func:`find_needles`, so text and reference cannot disagree.
"""

from __future__ import annotations

import bisect
import logging
import random
import re
import string
from collections.abc import Collection, Mapping, Sequence
from typing import ClassVar, Literal

import polars as pl

from saltbench.tasks.base import FewShot, Task, dataset_frame, sample_ids

logger = logging.getLogger(__name__)

WordsSubject = Literal[
    "numbers", "countries", "months", "capital_letters", "professions", "weekdays", "colors"
]

WORDS_SUBJECTS: tuple[WordsSubject, ...] = (
    "numbers",
    "countries",
    "months",
    "capital_letters",
    "professions",
    "weekdays",
    "colors",
)
"""The seven subjects, in the order of the paper data's subject frequency table (docs/tasks.md §8.7)."""

RULE_SUBJECTS: frozenset[str] = frozenset({"numbers", "capital_letters"})
"""Subjects defined by a character rule rather than a vocabulary (answers are not lower-cased)."""

DEFAULT_SUBJECT_WEIGHTS: dict[str, float] = {
    "numbers": 0.50,
    "countries": 0.12,
    "months": 0.10,
    "capital_letters": 0.05,
    "professions": 0.08,
    "weekdays": 0.08,
    "colors": 0.07,
}
"""Numbers-heavy like the paper mix (214/300 numbers), but with every subject well represented."""

# The word lists below are data, laid out as rows of words; one word per line (the formatter's layout)
# would make them six times longer without making them easier to read or change.
# fmt: off
# -- vocabularies and generator lexicon (our own lists) ------------------------------------------
MONTHS: tuple[str, ...] = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)

WEEKDAYS: tuple[str, ...] = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

CAPITAL_LETTERS: tuple[str, ...] = tuple(string.ascii_uppercase)

COLORS: tuple[str, ...] = (
    "red", "blue", "green", "yellow", "black", "white", "orange", "purple", "pink", "brown",
    "gray", "grey", "violet", "indigo", "cyan", "magenta", "turquoise", "teal", "navy", "maroon",
    "olive", "beige", "ivory", "gold", "silver", "bronze", "lavender", "lilac", "crimson", "scarlet",
    "burgundy", "amber", "coral", "salmon", "peach", "mint", "lime", "emerald", "jade", "khaki",
    "tan", "charcoal", "cream", "azure", "cobalt", "sapphire", "ruby", "fuchsia", "mauve", "ochre",
    "sepia", "rust", "plum", "aqua", "chartreuse", "vermilion", "cerulean", "periwinkle", "taupe",
    "mustard", "copper", "platinum", "sienna", "umber", "mahogany", "orchid", "rose", "sand",
    "light blue", "dark green", "navy blue", "sky blue",
)

COUNTRIES: tuple[str, ...] = (
    "afghanistan", "albania", "algeria", "andorra", "angola", "antigua and barbuda", "argentina",
    "armenia", "australia", "austria", "azerbaijan", "bahamas", "bahrain", "bangladesh", "barbados",
    "belarus", "belgium", "belize", "benin", "bhutan", "bolivia", "bosnia and herzegovina", "botswana",
    "brazil", "brunei", "bulgaria", "burkina faso", "burundi", "cabo verde", "cambodia", "cameroon",
    "canada", "central african republic", "chad", "chile", "china", "colombia", "comoros", "congo",
    "costa rica", "croatia", "cuba", "cyprus", "czechia", "czech republic", "denmark", "djibouti",
    "dominica", "dominican republic", "ecuador", "egypt", "el salvador", "equatorial guinea", "eritrea",
    "estonia", "eswatini", "ethiopia", "fiji", "finland", "france", "gabon", "gambia", "georgia",
    "germany", "ghana", "greece", "grenada", "guatemala", "guinea", "guinea-bissau", "guyana", "haiti",
    "honduras", "hungary", "iceland", "india", "indonesia", "iran", "iraq", "ireland", "israel", "italy",
    "ivory coast", "jamaica", "japan", "jordan", "kazakhstan", "kenya", "kiribati", "kosovo", "kuwait",
    "kyrgyzstan", "laos", "latvia", "lebanon", "lesotho", "liberia", "libya", "liechtenstein",
    "lithuania", "luxembourg", "madagascar", "malawi", "malaysia", "maldives", "mali", "malta",
    "marshall islands", "mauritania", "mauritius", "mexico", "micronesia", "moldova", "monaco",
    "mongolia", "montenegro", "morocco", "mozambique", "myanmar", "burma", "namibia", "nauru", "nepal",
    "netherlands", "new zealand", "nicaragua", "niger", "nigeria", "north korea", "north macedonia",
    "norway", "oman", "pakistan", "palau", "palestine", "panama", "papua new guinea", "paraguay", "peru",
    "philippines", "poland", "portugal", "qatar", "romania", "russia", "rwanda", "saint kitts and nevis",
    "saint lucia", "saint vincent and the grenadines", "samoa", "san marino", "sao tome and principe",
    "saudi arabia", "senegal", "serbia", "seychelles", "sierra leone", "singapore", "slovakia",
    "slovenia", "solomon islands", "somalia", "south africa", "south korea", "south sudan", "spain",
    "sri lanka", "sudan", "suriname", "sweden", "switzerland", "syria", "taiwan", "tajikistan",
    "tanzania", "thailand", "east timor", "timor-leste", "togo", "tonga", "trinidad and tobago",
    "tunisia", "turkey", "turkmenistan", "tuvalu", "uganda", "ukraine", "united arab emirates",
    "united kingdom", "united states", "uruguay", "uzbekistan", "vanuatu", "vatican city", "venezuela",
    "vietnam", "yemen", "zambia", "zimbabwe",
)

PROFESSIONS: tuple[str, ...] = (
    "accountant", "actor", "actress", "analyst", "architect", "artist", "astronaut", "athlete",
    "attorney", "auditor", "author", "baker", "banker", "barber", "bartender", "biologist",
    "blacksmith", "bricklayer", "broker", "butcher", "carpenter", "cashier", "chef", "chemist",
    "clerk", "coach", "composer", "consultant", "cook", "dancer", "dentist", "designer", "detective",
    "developer", "diplomat", "director", "doctor", "economist", "editor", "electrician", "engineer",
    "entrepreneur", "farmer", "firefighter", "fisherman", "florist", "gardener", "geologist",
    "hairdresser", "historian", "illustrator", "inspector", "instructor", "interpreter", "janitor",
    "jeweler", "journalist", "judge", "lawyer", "librarian", "lifeguard", "locksmith", "machinist",
    "manager", "mathematician", "mechanic", "midwife", "miner", "musician", "nurse", "optician",
    "painter", "paramedic", "pharmacist", "philosopher", "photographer", "physician", "physicist",
    "physiotherapist", "pilot", "plumber", "poet", "politician", "professor", "programmer",
    "psychologist", "receptionist", "reporter", "researcher", "sailor", "salesman", "scientist",
    "sculptor", "secretary", "senator", "singer", "soldier", "surgeon", "surveyor", "tailor", "teacher",
    "technician", "therapist", "translator", "veterinarian", "waiter", "waitress", "welder", "writer",
    "software engineer", "police officer", "flight attendant", "real estate agent", "civil servant",
    "social worker", "truck driver", "web developer",
)

# -- generator lexicon (none of these words is a vocabulary token) ----------------------------------
COMPANY_STEMS: tuple[str, ...] = (
    "Northwind", "Halcyon", "Brightwater", "Kestrel", "Meridian", "Ironbridge", "Lakeshore", "Tidewater",
    "Harbourline", "Corvid", "Pinecrest", "Aldermoor", "Westfield", "Stonegate", "Quillon", "Ardent",
    "Cobblestone", "Thornbury", "Ellesmere", "Oakhaven", "Marlow", "Fenwick", "Larkspur", "Hollins",
    "Ravensworth", "Carrow", "Summit Ridge", "Vantage Point", "Granite Peak", "Eastgate",
)
COMPANY_SUFFIXES: tuple[str, ...] = (
    "Inc", "Corp", "Holdings", "Group", "Industries", "Ltd", "Partners", "Systems", "Bancorp", "Energy",
    "Foods", "Resources",
)
FIRST_NAMES: tuple[str, ...] = (
    "Alan", "Maria", "David", "Elena", "James", "Priya", "Thomas", "Sofia", "Robert", "Hannah", "Kenji",
    "Laura", "Michael", "Ingrid", "Samuel", "Nadia", "Peter", "Claire", "Victor", "Ana", "Oliver",
    "Yusuf", "Helen", "Marcus", "Irene", "Daniel", "Leila", "Paul", "Rita", "Tomas",
)
SURNAMES: tuple[str, ...] = (
    "Harlan", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Castillo", "Brennan", "Kowalski", "Haddad",
    "Fischer", "Novak", "Sato", "Petrov", "Duarte", "Lambert", "Osei", "Reyes", "Holm", "Varga",
    "Iversen", "Bianchi", "Mendez", "Quinn", "Sorensen", "Abbott", "Keller", "Nakamura", "Delgado",
    "Ferris", "Whitmore",
)
CAMEL_SURNAMES: tuple[str, ...] = (
    "McAllister", "MacLeod", "DeVries", "O'Neill", "McKenna", "LaRue", "DiMarco", "VanDyke", "FitzGerald",
)
CITIES: tuple[str, ...] = (
    "Rotterdam", "Osaka", "Lagos", "Denver", "Lyon", "Perth", "Bilbao", "Tampere", "Gdansk", "Porto",
    "Calgary", "Leeds", "Hamburg", "Chicago", "Houston", "Seattle", "Nagoya", "Busan", "Mumbai",
    "Valencia", "Geneva", "Zurich", "Antwerp", "Marseille", "Toronto", "Montreal", "Melbourne",
    "Auckland", "Dallas", "Boston",
)
PRODUCTS: tuple[str, ...] = (
    "crude oil", "wheat", "coffee", "cocoa", "sugar", "aluminium", "zinc", "nickel", "lumber", "soybeans",
    "cotton", "natural gas", "steel", "corn", "palm oil", "rubber", "iron ore", "barley",
)
QUARTERS: tuple[str, ...] = ("first", "second", "third", "fourth")
TAG_SUFFIXES: tuple[str, ...] = ("YO", "KM", "MW", "GB", "X", "s")

NATIONALITIES: tuple[str, ...] = (
    "French", "German", "Chinese", "Japanese", "Canadian", "Brazilian", "Mexican", "Italian", "Indian",
    "Russian", "British", "Spanish", "Kenyan", "Egyptian", "Swedish", "Norwegian", "Dutch", "Turkish",
    "Greek", "Peruvian",
)
PROFESSION_PLURALS: tuple[str, ...] = (
    "engineers", "teachers", "nurses", "farmers", "lawyers", "doctors", "pilots", "bakers", "miners",
    "economists", "welders", "electricians", "mechanics", "surgeons",
)
# fmt: on
PROFESSION_GERUNDS: tuple[str, ...] = ("engineering", "nursing", "farming", "teaching", "mining", "banking")

VOCABULARIES: dict[str, tuple[str, ...]] = {
    "numbers": (),
    "countries": COUNTRIES,
    "months": MONTHS,
    "capital_letters": CAPITAL_LETTERS,
    "professions": PROFESSIONS,
    "weekdays": WEEKDAYS,
    "colors": COLORS,
}
"""Built-in vocabulary per subject (``numbers`` has none: any digit run is a needle)."""

_VOCAB_SETS: dict[str, frozenset[str]] = {s: frozenset(v) for s, v in VOCABULARIES.items()}
_SINGLE_WORD: dict[str, tuple[str, ...]] = {
    s: tuple(w for w in v if re.fullmatch(r"[a-z]+", w)) for s, v in VOCABULARIES.items()
}
_DIGIT_RUN = re.compile(r"\d+")
_LETTER_RUN = re.compile(r"[A-Za-z]+")
_WORD = re.compile(r"\S+")


# -- the reference rule ---------------------------------------------------------------------------
def _check_subject(subject: object) -> str:
    if subject not in WORDS_SUBJECTS:
        raise ValueError(f"subject must be one of {', '.join(WORDS_SUBJECTS)}, got {subject!r}")
    return subject


def find_needles(text: str, subject: str, vocabulary: Collection[str] | None = None) -> str:
    """The needles of ``subject`` in ``text``, in order and with repetitions, joined by single spaces.

    Args:
        text: the haystack.
        subject: one of :data:`WORDS_SUBJECTS`.
        vocabulary: replaces the built-in vocabulary of a word subject (e.g. the paper data's
            per-row ``subject_set``); ignored for ``numbers`` and ``capital_letters``, which are
            defined by character rules.

    >>> find_needles("roses are red, violets are blue and watermelons are red and green", "colors")
    'red blue red green'
    >>> find_needles("paid 750 , 000 dlrs to a 35YO", "numbers")
    '750 000 35'
    >>> find_needles("McAllister of the U . S .", "capital_letters")
    'M A U S'
    """
    return " ".join(needle for _, needle in needle_matches(text, subject, vocabulary))


def needle_matches(
    text: str, subject: str, vocabulary: Collection[str] | None = None
) -> list[tuple[int, str]]:
    """``(character offset, needle)`` of every needle of :func:`find_needles`, in text order.

    >>> needle_matches("on monday, not friday", "weekdays")
    [(3, 'monday'), (15, 'friday')]
    """
    subject = _check_subject(subject)
    if subject == "numbers":
        return [(m.start(), m.group()) for m in _DIGIT_RUN.finditer(text)]
    if subject == "capital_letters":
        return [(i, c) for i, c in enumerate(text) if c.isupper()]
    vocab = _VOCAB_SETS[subject] if vocabulary is None else frozenset(vocabulary)
    return [(m.start(), m.group()) for m in _LETTER_RUN.finditer(text.lower()) if m.group() in vocab]


def subject_label(subject: str) -> str:
    """The subject as prompts write it (``capital_letters`` → ``capital letters``)."""
    return _check_subject(subject).replace("_", " ")


# -- procedural haystacks -------------------------------------------------------------------------
HEADLINE_TEMPLATES: tuple[str, ...] = (
    "{co} sets quarterly dividend",
    "{co} to buy stake in {co}",
    "{co} reports {qtr} quarter loss",
    "{country} {product} exports climb",
    "{co} names new chief executive",
    "{co} sees higher {year} earnings",
    "{city} dock strike ends",
    "{co} extends offer for {co}",
    "{co} ( {ticker} ) raises {product} output",
    "{month} {product} stocks fall",
)
"""Upper-cased news headlines opening every haystack (a source of capital letters)."""

BODY_TEMPLATES: tuple[str, ...] = (
    "{co} said it agreed to acquire {co} for {amount} .",
    "{co} said net profit climbed to {amount} in the {qtr} quarter from {amount} a year earlier .",
    "shares of {co} gained {pct} to close at {price} dlrs on {weekday} .",
    "{person} , a {profession} from {city} , said the plan would create {int} jobs .",
    "the board of {co} will meet on {weekday} to vote on the proposal .",
    "{co} expects to ship {int} tonnes of {product} to {country} by {month} .",
    "exports of {product} to {country} climbed {pct} in {month} , officials said .",
    "the agreement was signed in {city} on {month} {day} , {year} .",
    "{co} painted its new fleet {color} and {color} , a spokeswoman said .",
    "the new {product} terminal in {city} will open in {month} with {int} berths .",
    "{person} , who worked as a {profession} for {int} years , joined {co} in {year} .",
    "the {color} logo of {co} was replaced by a {color} one in {year} .",
    "trading in {co} stock was halted on {weekday} pending an announcement .",
    "the central bank of {country} cut its key rate to {pct} on {weekday} .",
    "{co} named {person} , a former {profession} , as its new chairman .",
    "the firm hired {int} new staff in {country} and {country} last year .",
    "output of {product} fell to {int} tonnes in the week to {month} {day} .",
    "analysts at {co} forecast growth of {pct} for {year} .",
    "{person} said the {tag} figures were in line with expectations .",
    "the {tag} model sold {int} units in its first month on the market .",
    "a {color} banner hung outside the {city} office of {co} on {weekday} .",
    "{co} ( {ticker} ) said it sees revenue of {amount} for {year} .",
    "the deal values {co} at about {amount} , or {price} dlrs per share .",
    "{country} accounted for {pct} of group sales , up from {pct} .",
    "{person} , a {profession} , and {person} , a {profession} , founded the company in {city} .",
    "the strike in {city} ended on {weekday} after {int} days .",
    "the report , published in {month} , said {int} of the {int} plants were idle .",
    "visitors described the new headquarters in {city} as {color} , {color} and {color} .",
    "the offer expires on {month} {day} unless extended .",
    "{co} will report results on {weekday} , {month} {day} .",
    "delegates from {country} met their counterparts in {city} to discuss {product} quotas .",
    "a {profession} at the {city} plant said output had doubled since {year} .",
    "{co} reported a loss of {amount} against a profit of {amount} .",
    "the company has {int} employees and sells its {product} in {int} markets .",
    "the {tag} tender for {product} drew bids from {country} and {country} .",
    "{person} told the press on {weekday} that the {color} line would be dropped .",
)
"""Body sentences; ``{slot}`` names pick the filler (see ``_fill``), punctuation is space-separated."""

DISTRACTOR_TEMPLATES: dict[str, tuple[str, ...]] = {
    "months": (
        "the mayor of {city} welcomed the decision .",
        "analysts said a recovery was maybe {int} quarters away .",
        "workers marched through central {city} to protest the closure .",
        "to the dismay of investors , {co} cut its dividend .",
        "a junior partner at {co} left to start a rival firm .",
        "the marching band of {city} played at the opening ceremony .",
    ),
    "weekdays": (
        "stores in {city} will now open on sundays .",
        "deliveries to the {city} depot arrive on mondays and fridays .",
        "weekday traffic through {city} fell {pct} in the quarter .",
        "the exchange is closed on weekends and public holidays .",
        "{co} holds board meetings on tuesdays .",
        "the market in {city} is busiest on saturdays .",
    ),
    "colors": (
        "the blueprint for the merger was drawn up by {co} .",
        "a blackout hit {city} for {int} hours .",
        "the greenhouse project near {city} will cost {amount} .",
        "critics called the inquiry into {co} a whitewash .",
        "the {city} mine produces a reddish ore with a yellowish tint .",
        "{co} bought {int} tonnes of oranges from local growers .",
        "the redesign of the {city} terminal was delayed again .",
        "sales of silverware at {co} slipped {pct} .",
    ),
    "countries": (
        "{nation} officials said talks with {co} would resume next week .",
        "the {nation} unit of {co} was sold for {amount} .",
        "{nation} and {nation} buyers took most of the {product} on offer .",
    ),
    "professions": (
        "{plural} at the {city} plant voted to strike .",
        "the {gerund} division of {co} posted a loss of {amount} .",
        "{co} plans to hire {int} {plural} in {city} .",
    ),
    "numbers": (
        "{co} opened five new branches and a dozen outlets .",
        "output doubled for the third year in a row .",
        "about half of the staff took part in the ballot .",
        "the plant employs several hundred workers and twice as many contractors .",
    ),
    "capital_letters": (
        "{camel} , a partner at {co} , declined to comment .",
        "no further details were given .",
        "{camel} and {camel} will join the board of {co} .",
    ),
}
"""Per subject: sentences with look-alikes that are *not* needles under the lexical rule
(``mayor``, ``sundays``, ``reddish``, ``french``, ``engineers``, ``five``) or, for capital letters,
inner capitals (``McAllister``) and capital-free sentences."""

_SLOT_RE = re.compile(r"\{(\w+)\}")
_ARTICLE_RE = re.compile(r"\b([Aa]) (?=[AEIOUaeiou])")  # "a athlete" -> "an athlete"
_SLOT_SUBJECT: dict[str, str] = {
    "country": "countries",
    "month": "months",
    "weekday": "weekdays",
    "profession": "professions",
    "color": "colors",
}
"""Template slots whose fillers are needles of a subject."""


def _slots(template: str) -> set[str]:
    return set(_SLOT_RE.findall(template))


def _format_int(rng: random.Random, value: int) -> str:
    """An integer as news text: thousands separated the tokenised way (``750 , 000``) 70% of the time."""
    if value >= 1000 and rng.random() < 0.7:
        return f"{value:,}".replace(",", " , ")
    return str(value)


def _tag(rng: random.Random) -> str:
    """A token with digits inside (``3RD``, ``21st``, ``Q4``, ``A320``, ``35YO``, ``1990s``)."""
    kind = rng.randrange(4)
    if kind == 0:
        n = rng.randint(1, 31)
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix.upper() if rng.random() < 0.5 else suffix}"
    if kind == 1:
        return f"Q{rng.randint(1, 4)}"
    if kind == 2:
        return f"{chr(rng.randint(65, 90))}{rng.randint(100, 999)}"
    number = rng.randint(2, 99) if rng.random() < 0.5 else rng.randint(1950, 1990)
    return f"{number}{rng.choice(TAG_SUFFIXES)}"


def _fill(rng: random.Random, slot: str) -> str:
    """A random filler for one template slot."""
    match slot:
        case "co":
            return f"{rng.choice(COMPANY_STEMS)} {rng.choice(COMPANY_SUFFIXES)}"
        case "person":
            return f"{rng.choice(FIRST_NAMES)} {rng.choice(SURNAMES)}"
        case "camel":
            return f"{rng.choice(FIRST_NAMES)} {rng.choice(CAMEL_SURNAMES)}"
        case "city":
            return rng.choice(CITIES)
        case "product":
            return rng.choice(PRODUCTS)
        case "qtr":
            return rng.choice(QUARTERS)
        case "ticker":
            return "".join(chr(rng.randint(65, 90)) for _ in range(rng.randint(3, 4)))
        case "country" | "month" | "weekday":
            return rng.choice(_SINGLE_WORD[_SLOT_SUBJECT[slot]]).capitalize()
        case "profession" | "color":
            return rng.choice(_SINGLE_WORD[_SLOT_SUBJECT[slot]])
        case "int":
            low, high = rng.choice(((2, 99), (100, 999), (1000, 99999)))
            return _format_int(rng, rng.randint(low, high))
        case "amount":
            unit = rng.choice(("mln dlrs", "billion dlrs", "dlrs"))
            if unit == "dlrs":
                return f"{_format_int(rng, rng.randint(10, 999) * 1000)} dlrs"
            if rng.random() < 0.5:
                return f"{rng.randint(1, 99)} . {rng.randint(1, 9)} {unit}"
            return f"{rng.randint(1, 950)} {unit}"
        case "pct":
            if rng.random() < 0.5:
                return f"{rng.randint(1, 40)} . {rng.randint(1, 9)} pct"
            return f"{rng.randint(1, 40)} pct"
        case "price":
            return f"{rng.randint(2, 150)} . {rng.randint(0, 99):02d}"
        case "day":
            return str(rng.randint(1, 28))
        case "year":
            return str(rng.randint(1985, 2025))
        case "tag":
            return _tag(rng)
        case "nation":
            return rng.choice(NATIONALITIES)
        case "plural":
            return rng.choice(PROFESSION_PLURALS)
        case "gerund":
            return rng.choice(PROFESSION_GERUNDS)
    raise ValueError(f"template slot {slot!r} has no filler")


def _render(rng: random.Random, template: str) -> str:
    """Fill every slot of ``template`` (left to right) and capitalise the first letter."""
    text = _ARTICLE_RE.sub(r"\1n ", _SLOT_RE.sub(lambda m: _fill(rng, m.group(1)), template))
    return text[0].upper() + text[1:]


def _sentence(rng: random.Random, subject: str, needle_rate: float, distractor_rate: float) -> str:
    """One body sentence: a distractor with probability ``distractor_rate``; otherwise a template
    with a slot of the subject with probability ``needle_rate`` (word subjects), or any template."""
    if rng.random() < distractor_rate:
        return _render(rng, rng.choice(DISTRACTOR_TEMPLATES[subject]))
    pool = _BODY_POOLS.get(subject)
    if pool is None:
        return _render(rng, rng.choice(BODY_TEMPLATES))
    with_needle, without = pool
    return _render(rng, rng.choice(with_needle if rng.random() < needle_rate else without))


_MEAN_SENTENCE_TOKENS = 14
"""Approximate whitespace tokens per rendered body sentence."""

_BODY_POOLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    subject: (
        tuple(t for t in BODY_TEMPLATES if slot in _slots(t)),
        tuple(t for t in BODY_TEMPLATES if slot not in _slots(t)),
    )
    for slot, subject in _SLOT_SUBJECT.items()
}


def generate_haystack(
    rng: random.Random,
    subject: str,
    *,
    min_words: int = 100,
    max_words: int = 1000,
    min_needles: int = 5,
    length_skew: float = 3.0,
    needle_rate: float = 0.6,
    distractor_rate: float = 0.2,
    max_attempts: int = 200,
) -> tuple[str, str]:
    """One ``(text, reference)`` pair.

    The length L (whitespace tokens) is drawn once, ``L = min_words + round((max_words - min_words)
    · u^length_skew)`` with ``u ~ U[0, 1)`` — skewed to short texts (median ≈ 212 for the defaults,
    like the paper data). The text is an upper-cased headline followed by body sentences, cut to
    exactly L tokens. For word subjects the share of needle sentences is raised above
    ``needle_rate`` in short texts, to ``min(1, 1.5 · min_needles · 14 / L)`` (14 ≈ tokens per
    sentence). Texts with fewer than ``min_needles`` needles are redrawn (same L).

    Raises:
        ValueError: no text with ``min_needles`` needles after ``max_attempts`` draws.
    """
    subject = _check_subject(subject)
    target = min_words + round((max_words - min_words) * rng.random() ** length_skew)
    # short texts need denser needles: aim at >= 1.5 * min_needles needle sentences
    rate = max(needle_rate, min(1.0, 1.5 * min_needles * _MEAN_SENTENCE_TOKENS / max(target, 1)))
    for _ in range(max_attempts):
        tokens = _render(rng, rng.choice(HEADLINE_TEMPLATES)).upper().split()
        while len(tokens) < target:
            tokens += _sentence(rng, subject, rate, distractor_rate).split()
        text = " ".join(tokens[:target])
        reference = find_needles(text, subject)
        if len(reference.split()) >= min_needles:
            return text, reference
    raise ValueError(
        f"min_needles={min_needles} not reached for subject {subject!r} in {max_attempts} texts of "
        f"{target} words; lower min_needles or raise min_words"
    )


def allocate_subjects(n: int, weights: Mapping[str, float], rng: random.Random) -> list[str]:
    """Stratified weighted choice: ``n`` subjects in random order, counts proportional to ``weights``.

    Every subject with positive weight gets at least one sample when ``n`` allows; the remaining
    samples are apportioned by largest remainder (ties in :data:`WORDS_SUBJECTS` order).
    """
    active = [s for s in WORDS_SUBJECTS if weights.get(s, 0.0) > 0]
    counts = dict.fromkeys(active, 1 if n >= len(active) else 0)
    remaining = n - sum(counts.values())
    total = sum(weights[s] for s in active)
    quotas = {s: remaining * weights[s] / total for s in active}
    for s in active:
        counts[s] += int(quotas[s])
    leftover = remaining - sum(int(q) for q in quotas.values())
    by_remainder = sorted(active, key=lambda s: (int(quotas[s]) - quotas[s], WORDS_SUBJECTS.index(s)))
    for s in by_remainder[:leftover]:
        counts[s] += 1
    order: list[str] = [s for s in active for _ in range(counts[s])]
    rng.shuffle(order)
    return order


# -- the task --------------------------------------------------------------------------------------
_EXAMPLE_TEXT = "roses are red, violets are blue and watermelons are red and green"


def _question(subject: str, text: str) -> str:
    return f"List all the {subject_label(subject)} mentioned in the given text:\n{text}"


_FEW_SHOTS = (
    FewShot(input=_question("colors", _EXAMPLE_TEXT), output="red blue red green"),
    FewShot(
        input=_question("weekdays", "on monday the report moved from march to april before friday"),
        output="monday friday",
    ),
)


class WordsTask(Task):
    """Words Collection: list the needles of one subject in order (docs/tasks.md §7).

    ``WordsTask(variant=subject)`` binds the subject needed by ``prompt``/``solve``; an unbound task
    can only ``generate``. ``generate`` params (all optional):

        subjects: subjects to draw from (default: the bound subject, else all seven).
        subject_weights: mapping subject -> weight (default :data:`DEFAULT_SUBJECT_WEIGHTS`).
        min_words, max_words: haystack length bounds in whitespace tokens (default 100, 1000).
        min_needles: minimum needles per haystack (default 5).
        length_skew: exponent of the length draw (default 3.0; 1.0 = uniform).
        needle_rate: share of body sentences built around a needle slot (default 0.6).
        distractor_rate: share of look-alike distractor sentences (default 0.2).

    The subject of each row is stored in the ``variant`` column.
    """

    slug: ClassVar[str] = "words"
    display_name: ClassVar[str] = "Words Collection"
    label: ClassVar[str] = "Words"
    legacy_names: ClassVar[tuple[str, ...]] = ("NeedlesInHaystackProblem",)
    delimiter = " "
    atom_regex = None
    few_shots = _FEW_SHOTS

    param_names: ClassVar[frozenset[str]] = frozenset(
        {
            "subjects",
            "subject_weights",
            "min_words",
            "max_words",
            "min_needles",
            "length_skew",
            "needle_rate",
            "distractor_rate",
        }
    )

    def __init__(self, variant: str | None = None) -> None:
        if variant is not None:
            _check_subject(variant)
        super().__init__(variant)

    @property
    def subject(self) -> str:
        """The bound subject (ValueError when the task is unbound)."""
        if self.variant is None:
            raise ValueError("WordsTask needs a subject: use WordsTask(variant=<subject>)")
        return self.variant

    def solve(self, input: str) -> str:
        return find_needles(input, self.subject)

    def instruction(self) -> str:
        label = subject_label(self.subject)
        case_rule = (
            "" if self.subject in RULE_SUBJECTS else " Write the final answer in lower-case letters only."
        )
        return "\n".join(
            [
                f"List all the {label} mentioned in the text, in the order in which they appear in it, "
                "and repeat an item each time it occurs again.",
                f"Separate the items only by a single space ' '.{case_rule}",
                f"For example, the colors mentioned in '{_EXAMPLE_TEXT}' are: red blue red green",
            ]
        )

    def worked_solution(self, input: str) -> str:
        """The scanned positions: ``w:needle`` for every needle, ``w`` the 1-based index of the
        whitespace-separated word it occurs in (``3:19 7:40``); ``none`` when the text has no needle."""
        word_starts = [m.start() for m in _WORD.finditer(input)]
        found = [
            f"{bisect.bisect_right(word_starts, at)}:{needle}"
            for at, needle in needle_matches(input, self.subject)
        ]
        return " ".join(found) or "none"

    def test_block(self, input: str) -> str:
        question = _question(self.subject, input)
        return f"Please answer the following as demonstrated before:\n{question}\nAnswer: "

    def generate(self, n: int, seed: int, **params: object) -> pl.DataFrame:
        self.check_params(params)
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        subjects = params.get("subjects")
        if subjects is None:
            subjects = WORDS_SUBJECTS if self.variant is None else (self.variant,)
        if isinstance(subjects, str) or not isinstance(subjects, Sequence) or not subjects:
            raise ValueError(f"subjects must be a non-empty list of subjects, got {subjects!r}")
        for s in subjects:
            if s not in WORDS_SUBJECTS:
                raise ValueError(f"subjects must hold only {', '.join(WORDS_SUBJECTS)}; got {s!r}")
        raw_weights = params.get("subject_weights") or DEFAULT_SUBJECT_WEIGHTS
        if not isinstance(raw_weights, Mapping):
            raise ValueError(f"subject_weights must be a mapping subject -> weight, got {raw_weights!r}")
        for s, w in raw_weights.items():
            if s not in WORDS_SUBJECTS or not isinstance(w, (int, float)) or w < 0:
                raise ValueError(f"subject_weights must map subjects to weights >= 0, got {s!r}: {w!r}")
        weights = {s: float(raw_weights.get(s, 0.0)) for s in subjects}
        if sum(weights.values()) <= 0:
            raise ValueError(f"subject_weights gives no positive weight to subjects {list(subjects)}")
        min_words = _int_param(params, "min_words", 100, minimum=1)
        max_words = _int_param(params, "max_words", 1000, minimum=min_words)
        min_needles = _int_param(params, "min_needles", 5, minimum=0)
        length_skew = _float_param(params, "length_skew", 3.0, low=0.0, high=float("inf"), open_low=True)
        needle_rate = _float_param(params, "needle_rate", 0.6, low=0.0, high=1.0)
        distractor_rate = _float_param(params, "distractor_rate", 0.2, low=0.0, high=1.0)

        rng = random.Random(seed)
        order = allocate_subjects(n, weights, rng)
        ids = sample_ids(self.slug, n, seed, variant=self.variant)
        rows: list[dict[str, str | None]] = []
        for sid, subject in zip(ids, order, strict=True):
            text, reference = generate_haystack(
                rng,
                subject,
                min_words=min_words,
                max_words=max_words,
                min_needles=min_needles,
                length_skew=length_skew,
                needle_rate=needle_rate,
                distractor_rate=distractor_rate,
            )
            row = {"sample_id": sid, "task": self.slug, "variant": subject, "input": text}
            rows.append({**row, "reference": reference})
        return dataset_frame(rows)


def _int_param(params: Mapping[str, object], name: str, default: int, *, minimum: int) -> int:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _float_param(
    params: Mapping[str, object],
    name: str,
    default: float,
    *,
    low: float,
    high: float,
    open_low: bool = False,
) -> float:
    value = params.get(name, default)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        ok = (low < value if open_low else low <= value) and value <= high  # type: ignore[operator]
    if not ok:
        bracket = "(" if open_low else "["
        raise ValueError(f"{name} must be a number in {bracket}{low}, {high}], got {value!r}")
    return float(value)  # type: ignore[arg-type]
