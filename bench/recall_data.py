"""Generate the labelled retrieval set for conversational memory: bench/data/recall_*.jsonl.

The question it answers: weeks after someone said something, does memory search find the
message that said it? The set is synthetic, seeded and built from the standard library only, so
`python bench/recall_data.py` rewrites both files byte for byte.

- `recall_messages.jsonl`: ~13 weeks of chat between eight users and the agent, in the import
  format `{"id", "session", "user", "role", "content", "ts"}`, ids in time order; an agent
  message carries the user it answers, and a shared Slack channel mixes four users. Most of it
  is filler conversation stitched from short coherent threads (cooking, code, travel, work...)
  whose slots are filled from shared vocabularies. Planted among it are fact messages (a
  `Family` of phrasings filled with per-user values), each with distractors: messages by the
  same user that share words with the fact but do not answer it. Most families are planted for
  two to four users with different values, so a search that ignores the asking user finds the
  wrong person's fact.
- `recall_questions.jsonl`: one question per fact, plus paraphrase variants for some,
  `{"question", "user", "answer_ids", "kind"}`. Kinds, by how the question overlaps the fact
  after stop words and porter stemming:
    lexical    every content word of the question is in the fact (word forms may differ)
    partial    some are, some are not: an AND of all words finds nothing
    semantic   at most one is; the rest is synonyms or paraphrase ("sibling" for "sister")
    substring  an identifier fragment that sits inside one token of the fact ("8007" in
               "0x80070005"): needs a trigram index
  `--check` verifies these labels against real FTS5 porter and trigram indexes (needs apsw)
  and prints plain bm25 baselines per kind: own user vs all users, stemming vs none, OR vs AND.

Invariants: answers are always user messages of the asking user, stated before the question
would be asked; the assistant's acknowledgements never repeat the fact's values.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw  # only --check needs it; generating is stdlib only

SEED = 20261101
START = datetime(2026, 7, 6, tzinfo=timezone.utc)
DAYS = 91
DATA_DIR = Path(__file__).resolve().parent / "data"
MESSAGES_FILE = DATA_DIR / "recall_messages.jsonl"
QUESTIONS_FILE = DATA_DIR / "recall_questions.jsonl"
KINDS = ("lexical", "partial", "semantic", "substring")
KIND_TARGETS = {"lexical": 0.34, "partial": 0.26, "semantic": 0.28, "substring": 0.12}


@dataclass(frozen=True)
class User:
    name: str
    platform: str
    hours: tuple[int, ...]  # hours of day (UTC) they tend to chat
    sessions: int


USERS = (
    User("ana", "telegram", (7, 8, 12, 19, 20, 21, 22), 72),
    User("ben", "slack", (9, 10, 11, 14, 15, 16, 17), 76),
    User("chen", "cli", (10, 13, 16, 21, 22, 23, 0), 70),
    User("dara", "slack", (8, 9, 10, 13, 14, 15, 18), 74),
    User("emeka", "telegram", (6, 7, 12, 18, 19, 20), 66),
    User("farah", "telegram", (9, 11, 15, 20, 21, 22), 70),
    User("gus", "cli", (14, 15, 16, 22, 23, 0, 1), 64),
    User("hana", "slack", (8, 9, 11, 13, 16, 17), 74),
)
TEAM = ("ben", "dara", "hana", "chen")  # share a Slack channel with the agent
TEAM_SESSIONS = 30


# --------------------------------------------------------------------------------------------
# Facts: each family is a thing people tell an assistant and ask about weeks later.
# Slot values with "a|b" give `{slot}` = a and `{slot_part}` = b (an identifier and a fragment).
# `{other_<slot>}` in a distractor is another value of the same slot. Other `{names}` come from
# VOCAB. A distractor "user text||reply" carries its own reply.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    key: str
    slots: dict[str, tuple[str, ...]]
    facts: tuple[str, ...]
    questions: dict[str, tuple[str, ...]]  # kind -> templates
    distractors: tuple[str, ...]
    acks: tuple[str, ...]


def family(
    key: str,
    slots: dict[str, tuple[str, ...]],
    facts: Sequence[str],
    *,
    distractors: Sequence[str],
    acks: Sequence[str],
    **questions: Sequence[str],
) -> Family:
    return Family(
        key,
        slots,
        tuple(facts),
        {kind: tuple(qs) for kind, qs in questions.items() if qs},
        tuple(distractors),
        tuple(acks),
    )


CITIES = (
    "Lisbon",
    "Berlin",
    "Osaka",
    "Toronto",
    "Melbourne",
    "Copenhagen",
    "Seoul",
    "Austin",
    "Edinburgh",
    "Valencia",
    "Montréal",
    "São Paulo",
    "Kraków",
    "Nairobi",
    "Vancouver",
    "Reykjavík",
    "Tbilisi",
    "Zürich",
)
DATES = (
    "October 18th",
    "November 2nd",
    "the 27th of October",
    "December 6th",
    "November 21st",
    "January 10th",
    "the 3rd of December",
    "November 14th",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
TIMES = ("9:30", "8:15", "11:45", "2:20 pm", "4:10 pm", "7:40", "10:05", "3:30 pm")

FAMILIES: tuple[Family, ...] = (
    family(
        "sister_moved",
        {"city": CITIES},
        [
            "My sister just moved to {city} for her new job",
            "big news: my sister moved to {city}! she starts the new job there next week",
        ],
        lexical=["where did my sister move?", "where did my sister move to for her new job?"],
        partial=["which city did my sister end up moving to?"],
        semantic=["where is my sibling living these days?"],
        distractors=[
            "my sister says the new job is intense but she likes it",
            "my coworker {friend} is moving to {other_city} next month, so many farewell lunches",
            "my sister is coming over for dinner on Sunday, any easy dessert ideas?||A fruit galette is "
            "hard to get wrong: shop-bought pastry, sliced fruit, sugar, 35 minutes in a hot oven.",
            "is {other_city} expensive to live in compared to here?||Rent is the big variable; groceries "
            "and transport are usually close. Want me to compare a typical monthly budget?",
        ],
        acks=[
            "That's a big step for her! Hope she settles in fast.",
            "Exciting! New city, new job, lots to explore when you visit.",
        ],
    ),
    family(
        "brother_wedding",
        {
            "date": DATES,
            "venue": (
                "a vineyard outside Porto",
                "the old boathouse by the lake",
                "his fiancée's family farm",
                "a small chapel in Galway",
                "the botanical gardens downtown",
            ),
        },
        [
            "My brother's wedding is on {date} at {venue}",
            "save the date: my brother's wedding will be {date}, at {venue}",
        ],
        lexical=["when is my brother's wedding?"],
        partial=["where's the venue for my brother's wedding?"],
        semantic=["when does my sibling tie the knot?"],
        distractors=[
            "my brother asked me to give a speech at the wedding, help",
            "went to a friend's wedding last weekend, the speeches were so long",
            "my brother wants to borrow my drill again",
            "any gift ideas for a colleague's wedding? budget around {price}||Something from their "
            "registry is safest; otherwise a nice serving board or a framed print of where they met.",
        ],
        acks=["Lovely, congratulations to him!", "How exciting, that's going to be a beautiful day."],
    ),
    family(
        "mom_birthday",
        {"date": DATES, "age": ("sixty", "seventy", "sixty-five", "seventy-five", "fifty-five")},
        [
            "Mom's birthday is on {date}, she's turning {age} this year",
            "note for future me: mom turns {age} on {date}, birthday dinner at her place",
        ],
        lexical=["when is mom's birthday?"],
        partial=["what day is the birthday party for my mom?"],
        semantic=["how old is my mother going to be?"],
        distractors=[
            "what should I get mom for her birthday this year?||Something she'd never buy herself: a "
            "good cookbook, a day out, or a framed family photo.",
            "it's my colleague's birthday tomorrow, what's a nice card message?||Keep it short and "
            "warm: 'Happy birthday! Thanks for making Mondays bearable. Have a great one.'",
            "my mom sent me her lemon cake recipe, finally",
            "need to call mom this weekend",
        ],
        acks=["A milestone! Let me know if you want gift ideas.", "Nice, that sounds like a fun dinner."],
    ),
    family(
        "dentist",
        {"day": ("14th", "22nd", "3rd", "9th", "17th"), "time": TIMES},
        [
            "booked my dentist appointment: the {day} at {time}",
            "finally booked the dentist: appointment on the {day}, {time}",
        ],
        lexical=["when is my dentist appointment?"],
        partial=["what time did I book the dentist checkup for?"],
        semantic=["when do I get my teeth cleaned?"],
        distractors=[
            "the dentist sent a reminder text about my appointment",
            "need to book a haircut appointment before the trip",
            "my kid's dentist appointment got cancelled again, ugh",
            "the physio appointment moved to {weekday}",
        ],
        acks=["Good, that's one thing off the list.", "Noted. Fingers crossed for no fillings!"],
    ),
    family(
        "allergy",
        {"allergen": ("shellfish", "peanuts", "sesame", "kiwi", "cashews")},
        [
            "I'm allergic to {allergen}, so keep that in mind for any recipe ideas",
            "just so you know, I'm allergic to {allergen}. found out the hard way",
        ],
        lexical=["what am I allergic to?"],
        semantic=["which foods should I avoid eating?"],
        distractors=[
            "my friend {friend} is allergic to cats, so no pets at the party",
            "is it true you can outgrow a {other_allergen} allergy?||Some children outgrow it, adults "
            "less often. An allergist can test safely; don't try it at home.",
            "can you suggest a {dish} recipe for four people?||Sure: here's a version that takes about "
            "40 minutes and scales easily.",
        ],
        acks=[
            "Got it, I'll steer clear of that in suggestions.",
            "Thanks for telling me, I'll keep it in mind.",
        ],
    ),
    family(
        "pet_adopted",
        {
            "pet": ("kitten", "puppy", "rabbit", "rescue greyhound"),
            "petname": ("Miso", "Biscuit", "Pickle", "Juniper", "Waffles"),
        },
        [
            "We adopted a {pet} this weekend and named her {petname}",
            "we finally adopted a {pet} from the shelter and named her {petname}!",
        ],
        lexical=["what did we name the {pet} we adopted?"],
        partial=["what name did we give the {pet}?"],
        semantic=["what's our new furry friend called?"],
        distractors=[
            "the {pet} we adopted chewed through a cable",
            "my neighbour's {other_pet} keeps getting into our garden",
            "the shelter is asking for volunteers on weekends",
            "any tips for naming a new side project?||Pick something short, pronounceable and "
            "searchable; check the package name is free first.",
        ],
        acks=["Aww, welcome to the family!", "That's wonderful, send pictures!"],
    ),
    family(
        "partner_job",
        {
            "partner": ("wife", "husband", "partner", "girlfriend"),
            "company": (
                "Spotify",
                "the city hospital",
                "Shopify",
                "a design studio in town",
                "the university library",
            ),
        },
        [
            "My {partner} got the job at {company}!",
            "great news, my {partner} got the job at {company}, starts in two weeks",
        ],
        lexical=["where did my {partner} get the job?"],
        partial=["which company hired my {partner} for the new job?"],
        semantic=["where does my {partner} work now?"],
        distractors=[
            "my {partner} has a job interview next week and is nervous",
            "{friend} got a new job too, everyone is switching this year",
            "is it normal for a job offer to take three weeks?||It happens, especially with "
            "background checks. A polite check-in after two weeks is fine.",
        ],
        acks=["Congratulations to them, that's huge!", "Amazing news, well deserved I'm sure."],
    ),
    family(
        "medication",
        {
            "med": (
                "vitamin D and an iron tablet",
                "levothyroxine",
                "a magnesium supplement",
                "half a cetirizine",
            )
        },
        [
            "I take {med} every morning with breakfast",
            "doctor says I should take {med} every morning with breakfast from now on",
        ],
        lexical=["what do I take every morning with breakfast?"],
        partial=["which pills do I take in the morning?"],
        semantic=["what's my daily prescription?"],
        distractors=[
            "I keep forgetting breakfast on busy mornings",
            "should I take ibuprofen with food?||Yes, taking it with food or milk reduces stomach "
            "irritation.",
        ],
        acks=["Noted. A phone reminder helps with daily ones.", "Got it."],
    ),
    family(
        "gp_doctor",
        {
            "doctor": ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Ferreira"),
            "clinic": ("Riverside", "Elm Street", "Harbour", "Northgate"),
        },
        [
            "I registered with a new GP: Dr. {doctor} at the {clinic} practice",
            "registered with a new GP today, Dr. {doctor}, at the {clinic} practice",
        ],
        lexical=["who is my new GP?"],
        partial=["who's the new doctor I registered with?"],
        semantic=["what's my family physician's name?"],
        distractors=[
            "the GP waiting room was packed today",
            "the {other_clinic} pharmacy closes early on Saturdays",
        ],
        acks=["Good to have that sorted.", "Noted, hope they're a good one."],
    ),
    family(
        "passport",
        {"month": ("March", "January", "May", "February"), "year": ("2027",)},
        [
            "My passport expires in {month} {year}, need to renew it before any big trip",
            "ugh, checked and my passport expires in {month} {year}, need to renew",
        ],
        lexical=["when does my passport expire?"],
        partial=["what month does my passport expire?"],
        semantic=["until when is my travel document valid?"],
        distractors=[
            "{friend} lost her passport in {city} last year, what a nightmare",
            "how long does a passport renewal take these days?||Standard service is usually 3 to 6 "
            "weeks; fast-track exists if you're travelling soon.",
        ],
        acks=["Worth renewing early; some countries want six months left.", "Noted."],
    ),
    family(
        "car_service",
        {
            "garage": ("Autofix", "Kwik Fit", "Miller & Sons", "the Shell place on Kings Road"),
            "day": ("Thursday the 9th", "Monday the 20th", "Friday the 3rd", "Tuesday the 14th"),
        },
        [
            "the car is booked in at {garage} for its service on {day}",
            "booked the car service at {garage}, {day}, drop off at 8",
        ],
        lexical=["when is the car service?"],
        partial=["which garage is doing the car service?"],
        semantic=["when does the vehicle go to the mechanic?"],
        distractors=[
            "the car is making a weird clicking noise when I turn left",
            "car insurance renewal came in 20% higher, annoying",
            "is a service every 15,000 km enough?||For most modern cars, yes; check the manual, "
            "some want oil changes sooner.",
        ],
        acks=["Good, it was about time.", "Noted!"],
    ),
    family(
        "flight",
        {
            "city": CITIES,
            "flightno": ("TP1357|1357", "LH2218|2218", "KL1693|1693", "BA0917|0917", "AF1442|1442"),
            "time": ("6:40", "14:05", "21:30", "11:15"),
        },
        [
            "my flight to {city} is {flightno}, leaves at {time}",
            "booked! flight to {city}: {flightno}, it leaves at {time}",
        ],
        lexical=["when does my flight to {city} leave?"],
        partial=["what's my flight number to {city}?"],
        substring=["what time is flight {flightno_part}?"],
        distractors=[
            "flights to {other_city} are so expensive in December",
            "my colleague's flight got delayed four hours yesterday",
        ],
        acks=["Nice, that's a good time.", "Got it, have a great trip!"],
    ),
    family(
        "hotel",
        {
            "hotel": ("Almada Suites", "Casa Verde", "the Harbour Inn", "Pension Sonne"),
            "code": ("HX7Q2291|2291", "BK55Z8130|8130", "RS91T4467|4467", "CN30M7752|7752"),
        },
        [
            "hotel for the trip: we're staying at {hotel}, confirmation number {code}",
            "booked the hotel, we're staying at {hotel}, the confirmation number is {code}",
        ],
        lexical=["where are we staying, what was the hotel?"],
        substring=["which booking was {code_part}?"],
        distractors=[
            "the hotel breakfast last time was terrible",
            "do I need to print the booking "
            "confirmation?||Usually not; the name on the reservation and an ID are enough.",
        ],
        acks=["Perfect, saved in case you need it.", "Great, all set then."],
    ),
    family(
        "cabin_wifi",
        {
            "spot": (
                "on the fridge",
                "taped under the router",
                "in the blue guest book",
                "on a sticky note by the kettle",
                "on the back of the router",
            )
        },
        ["the wifi password at the cabin is {spot}", "note: the wifi password at the cabin is {spot}"],
        lexical=["where is the wifi password at the cabin?"],
        partial=["what's the password for the internet at the cabin?"],
        semantic=["how do I get online when we're at the lake house?"],
        distractors=[
            "the wifi at the cabin is painfully slow",
            "the office wifi keeps dropping in the afternoon",
            "I changed my email password and now nothing syncs||Sign out and back in on each device; "
            "most mail apps cache the old password.",
            "the cabin needs a new roof before winter",
        ],
        acks=["Good to know for next time.", "Noted!"],
    ),
    family(
        "gate_code",
        {"code": ("4471#", "2580", "1936*", "7702", "0318#")},
        [
            "the gate code for the new office is {code}",
            "they gave us the gate code for the new office: {code}",
        ],
        lexical=["what's the gate code for the new office?"],
        partial=["what's the code for the new office door?"],
        semantic=["how do I open the entrance barrier at work?"],
        distractors=[
            "the new office has a gym on the ground floor",
            "my garage door code stopped working",
            "the parking gate was stuck open all day",
        ],
        acks=["Got it.", "Noted, I'll remember it."],
    ),
    family(
        "spare_key",
        {
            "neighbour": ("Mrs. Alvarez", "Tom", "the Nguyens", "Greta", "Raj"),
            "n": ("12", "14", "7", "21", "3"),
        },
        [
            "the spare key is with {neighbour} at number {n}",
            "left the spare key with {neighbour} at number {n}",
        ],
        lexical=["who has the spare key?"],
        partial=["which neighbour did I leave the spare key with?"],
        semantic=["if I'm locked out, who can let me in?"],
        distractors=[
            "should I get a key safe instead of a spare key with neighbours?||A key safe is handy; "
            "pick an insurer-approved one and mount it out of sight.",
            "the key to the bike shed is lost again",
            "my neighbour's dog barked all night",
        ],
        acks=["Smart move.", "Good idea, noted."],
    ),
    family(
        "rent",
        {
            "amount": ("1,450", "980", "1,720", "1,260", "2,100"),
            "month": ("January", "December", "February", "March"),
        },
        [
            "rent is going up to {amount} a month from {month}",
            "landlord emailed: rent is going up to {amount} from {month}",
        ],
        lexical=["how much is rent going up to?"],
        partial=["how much is rent going up to next year?"],
        semantic=["what will I pay the landlord monthly?"],
        distractors=[
            "{friend}'s rent went up too, it's everywhere",
            "should I pay rent by standing order?||Yes, a standing order a day or two before the "
            "due date avoids late fees.",
        ],
        acks=["Oof, noted. Want to revisit the budget?", "That's a jump. Noted."],
    ),
    family(
        "plumber",
        {"day": WEEKDAYS, "window": ("8 and 10", "noon and 2", "9 and 1", "3 and 5")},
        [
            "the plumber is coming {day} between {window} to fix the boiler",
            "plumber booked, he's coming {day} between {window} for the boiler",
        ],
        lexical=["when is the plumber coming?"],
        partial=["when is the plumber repairing the boiler?"],
        semantic=["when is the heating guy showing up?"],
        distractors=[
            "the plumber's invoice came, the boiler part was expensive",
            "the kitchen tap is dripping again",
            "the electrician never showed up last time",
        ],
        acks=["Hope it's a quick fix.", "Noted, I'll remind you the day before if you like."],
    ),
    family(
        "gym",
        {
            "gym": ("Iron Works", "PureFit", "Boulder Barn", "Urban Climb", "Studio Nine"),
            "days": ("Mondays and Thursdays", "Tuesdays and Fridays", "three mornings a week"),
        },
        [
            "I signed up at the {gym} gym, going {days} before work",
            "signed up at the {gym} gym today! plan is {days} before work",
        ],
        lexical=["which gym did I sign up at?"],
        partial=["which gym did I sign up at to train before work?"],
        semantic=["where do I exercise these days?"],
        distractors=[
            "I skipped the gym twice this week",
            "the gym near the office is always packed at 6",
            "what's a good beginner routine?||Three full-body sessions a week: squat, push, pull, "
            "hinge, carry. Add weight slowly.",
        ],
        acks=["Nice, consistency is everything.", "Great! Want a simple plan for the first month?"],
    ),
    family(
        "half_marathon",
        {"city": CITIES, "date": DATES},
        [
            "I registered for the {city} half marathon on {date}",
            "done, I registered for the {city} half marathon! it's {date}",
        ],
        lexical=["when is the half marathon I registered for?"],
        partial=["what date is the half marathon race?"],
        semantic=["which race am I training for?"],
        distractors=[
            "half marathon training week 3 done, legs are tired",
            "{friend} ran a full marathon in under four hours",
            "my knee hurts after long runs, should I worry?||Persistent pain is worth a physio visit; "
            "meanwhile cut distance, not frequency.",
        ],
        acks=["Exciting! Let's plan the training.", "Great goal."],
    ),
    family(
        "book_club",
        {
            "book": ("Piranesi", "The Remains of the Day", "Klara and the Sun", "Pachinko", "The Overstory"),
            "month": ("November", "December", "October"),
        },
        [
            "book club picked {book} for {month}",
            "our book club picked {book} for {month}, I need to start it",
        ],
        lexical=["what book did book club pick?"],
        partial=["what novel is book club reading?"],
        semantic=["what are we reading for the reading group next?"],
        distractors=[
            "book club was fun but nobody finished the book",
            "I never finish the book club books on time",
            "recommend a short book for a flight?||A novella works: try something under 200 pages.",
        ],
        acks=["Good pick.", "Enjoy it!"],
    ),
    family(
        "anniversary",
        {
            "restaurant": ("Casa Lupita", "The Olive Tree", "Kin Khao", "Sushi Ren", "Le Petit Four"),
            "time": ("8 pm", "7:30", "8:15", "7 pm"),
        },
        [
            "our anniversary dinner is booked at {restaurant} for {time}",
            "booked {restaurant} for our anniversary dinner, {time}",
        ],
        lexical=["where is our anniversary dinner booked?"],
        partial=["what time is the anniversary dinner?"],
        semantic=["which restaurant are we going to to celebrate with my partner?"],
        distractors=[
            "what's a good anniversary gift that isn't flowers?||An experience you'd both enjoy, or "
            "something personal like a photo book of the year.",
            "my parents' anniversary is coming up too",
            "dinner with the team on {weekday} at the new ramen place",
        ],
        acks=["Lovely, enjoy the evening!", "Sounds perfect."],
    ),
    family(
        "vegetarian",
        {"month": ("June", "April", "the start of the year", "last spring")},
        [
            "I've been vegetarian since {month}, no meat for me",
            "fyi I've been vegetarian since {month}, so no meat in recipes please",
        ],
        lexical=["since when have I been vegetarian?"],
        partial=["when did I go vegetarian and stop eating meat?"],
        semantic=["when did I change my diet?"],
        distractors=[
            "being vegetarian at the work barbecue was hard",
            "{friend} went vegan for a month and gave up",
            "is tofu or tempeh better for protein?||Tempeh has a bit more per gram; both are good.",
        ],
        acks=["Noted, I'll keep recipes meat-free.", "Got it!"],
    ),
    family(
        "tutor",
        {
            "language": ("Spanish", "Japanese", "Portuguese", "German", "Korean"),
            "tutor": ("Lucía", "Kenji", "Beatriz", "Herr Vogel", "Min-ji"),
            "day": WEEKDAYS,
        },
        [
            "I'm taking {language} lessons with a tutor called {tutor} on {day}s",
            "started {language} lessons! the tutor is called {tutor}, we meet {day}s",
        ],
        lexical=["what's my {language} tutor called?"],
        partial=["what day is my {language} lesson with the tutor?"],
        semantic=["who teaches me {language}?"],
        distractors=[
            "my tutor gave me so much homework this week",
            "{language} grammar is breaking my brain",
            "my nephew needs a maths tutor, any tips on "
            "finding one?||Ask the school first; local parent groups usually know good ones.",
        ],
        acks=["Great, good luck with the lessons!", "Nice, that's a good routine."],
    ),
    family(
        "trash_day",
        {"weekday": WEEKDAYS},
        ["bins go out on {weekday} night here", "reminder to self: bins go out on {weekday} night"],
        lexical=["when do the bins go out?"],
        partial=["what night do the recycling bins go out?"],
        semantic=["which evening is rubbish collection?"],
        distractors=["the recycling centre is closed on {other_weekday}s", "the bin lid broke again"],
        acks=["Noted.", "Got it, want a weekly reminder?"],
    ),
    family(
        "holiday",
        {
            "place": ("Madeira", "the Amalfi coast", "Crete", "Lake Bled", "the Lofoten islands"),
            "date": DATES,
        },
        [
            "we booked {place} for the autumn holiday, flying out {date}",
            "autumn holiday booked: {place}, flying out {date}!",
        ],
        lexical=["where did we book for the autumn holiday?"],
        partial=["what date do we fly out on holiday?"],
        semantic=["where are we going on vacation in October?"],
        distractors=[
            "should I get travel insurance for the autumn holiday?||Yes if it's booked and paid; "
            "check cancellation cover.",
            "{friend} just got back from {other_place} and loved it",
            "the autumn school holiday dates changed again",
        ],
        acks=["Sounds wonderful!", "Oh nice, great choice."],
    ),
    family(
        "babysitter",
        {"sitter": ("Chloe", "Mateo", "Anya", "Ellie"), "rate": ("15", "18", "14", "20")},
        [
            "our babysitter {sitter} charges {rate} an hour",
            "{sitter}, our babysitter, charges {rate} an hour now",
        ],
        lexical=["how much does the babysitter charge?"],
        partial=["what do we pay the babysitter per hour?"],
        semantic=["what's the hourly rate for the nanny?"],
        distractors=["the babysitter cancelled on us for Saturday", "after-school club costs went up again"],
        acks=["Noted.", "Got it."],
    ),
    family(
        "grandma_soup",
        {
            "ingredient": (
                "a spoon of miso",
                "a parmesan rind",
                "smoked paprika",
                "a splash of fish sauce",
                "a pinch of nutmeg",
            )
        },
        [
            "the secret in grandma's soup is {ingredient}",
            "grandma finally told me: the secret in her soup is {ingredient}",
        ],
        lexical=["what's the secret in grandma's soup?"],
        partial=["what ingredient makes grandma's soup so good?"],
        semantic=["what makes my grandmother's broth taste special?"],
        distractors=[
            "grandma's birthday lunch is at the usual place",
            "my soup always turns out bland, "
            "why?||Usually salt and acid: season at the end and add a squeeze of lemon.",
        ],
        acks=["Ha, a family secret! Safe with me.", "Love that."],
    ),
    family(
        "kid_school",
        {
            "kid": ("Leo", "Maya", "Sami", "Ivy"),
            "school": ("Riverside Primary", "Oakfield Elementary", "St. Anne's", "Hillcrest Academy"),
            "date": ("September 8th", "September 3rd", "the 10th", "September 15th"),
        },
        [
            "{kid} starts school at {school} on {date}",
            "so {kid} starts school at {school} on {date}, time flies",
        ],
        lexical=["when does {kid} start school?"],
        partial=["when is {kid}'s first day at school?"],
        semantic=["what's the first day of class for {kid}?"],
        distractors=[
            "{kid} needs new shoes before school starts",
            "the school run traffic is terrible",
            "{kid}'s friend is having a party on Saturday",
        ],
        acks=["Big milestone!", "Exciting times."],
    ),
    family(
        "parking",
        {"spot": ("B2-17", "level 3, bay 41", "P1-08", "the one by the lift, 22")},
        ["my parking spot at the office is {spot}", "got assigned a parking spot at the office: {spot}"],
        lexical=["what's my parking spot at the office?"],
        partial=["what's the number of my parking spot?"],
        semantic=["where do I leave the car at work?"],
        distractors=[
            "parking near the stadium is impossible on match days",
            "the office canteen is closed this week",
        ],
        acks=["Noted.", "Nice, saves you circling around."],
    ),
    family(
        "alarm_code",
        {"code": ("9134", "5820", "3071", "6648")},
        ["the house alarm code is {code}", "new house alarm code is {code}, the installer changed it"],
        lexical=["what's the house alarm code?"],
        partial=["what's the code to disarm the house alarm?"],
        semantic=["how do I switch off the burglar system at home?"],
        distractors=["the smoke alarm beeps at 3am every night", "my car alarm went off twice today"],
        acks=["Stored. You might also want it in a password manager.", "Got it."],
    ),
    family(
        "insurance",
        {
            "insurer": ("Aviva", "Allianz", "Zurich", "Direct Line"),
            "policy": ("HMI88412QZ|88412", "HP20937KX|20937", "HOM55190T|55190", "HX31078PL|31078"),
        },
        [
            "our home insurance is with {insurer}, policy number {policy}",
            "home insurance renewed with {insurer}, policy number {policy}",
        ],
        lexical=["what's our home insurance policy number?"],
        partial=["which company do we have home insurance with?"],
        substring=["which policy was {policy_part}?"],
        distractors=[
            "travel insurance for the trip is so expensive",
            "car insurance wants a new photo of the odometer",
        ],
        acks=["Noted, good to have it handy.", "Got it."],
    ),
    family(
        "tax_deadline",
        {"date": ("January 31st", "the 15th of April", "October 31st", "March 1st")},
        [
            "the accountant says my tax return is due {date}",
            "my tax return is due {date}, per the accountant",
        ],
        lexical=["when is my tax return due?"],
        partial=["when does the tax return have to be filed?"],
        semantic=["what's the filing deadline with the revenue office?"],
        distractors=[
            "I still haven't started the tax return, help",
            "{friend} got a tax refund, lucky",
            "can I deduct my home office?||It depends on your "
            "country and employment status; ask the accountant with your receipts.",
        ],
        acks=["Noted, I can remind you a week before.", "Got it."],
    ),
    family(
        "db_choice",
        {
            "service": ("billing", "search", "notifications", "invoicing", "payments"),
            "db": ("Postgres 16", "CockroachDB", "MySQL 8", "DynamoDB", "SQLite with Litestream"),
        },
        [
            "we decided to use {db} for the {service} service",
            "after the design review we decided to use {db} for the {service} service",
        ],
        lexical=["what did we decide to use for the {service} service?"],
        partial=["what database did we decide on for {service}?"],
        semantic=["which database did we pick for {service}?"],
        distractors=[
            "the {service} service migration is going slower than we planned",
            "the {other_service} service is still on {other_db}, migration next year",
            "we decided to move the design review to {weekday}",
            "{other_db} 17 release notes look interesting",
        ],
        acks=["Solid choice. Want me to draft the migration plan?", "Makes sense."],
    ),
    family(
        "deploy_freeze",
        {"weekday": ("Friday", "Thursday"), "time": ("2 pm", "noon", "3 pm", "4 pm")},
        [
            "we agreed to freeze deploys on {weekday}s after {time}",
            "team decision: we freeze deploys on {weekday}s after {time}",
        ],
        lexical=["when do we freeze deploys?"],
        partial=["after what time do we freeze deploys each week?"],
        semantic=["on which day are releases paused?"],
        distractors=["the deploy pipeline took 40 minutes today", "we agreed to rotate the standup host"],
        acks=["Sensible.", "Good rule."],
    ),
    family(
        "staging_host",
        {
            "host": (
                "pgstage03.eu1.internal|pgstage",
                "stgdb07.corp.lan|stgdb",
                "mysqlstg2a.infra.local|mysqlstg",
                "dbstaging4.int.example|dbstaging",
            )
        },
        ["the staging database lives on {host}", "fyi the staging database lives on {host} now"],
        lexical=["where does the staging database live?"],
        partial=["what's the hostname of the staging database?"],
        substring=["what was the {host_part} host again?"],
        distractors=[
            "the staging database is out of disk again",
            "staging was down for an hour this morning",
            "the prod database is on a bigger box",
        ],
        acks=["Noted.", "Thanks, saved."],
    ),
    family(
        "error_code",
        {
            "job": ("nightly export", "invoice sync", "thumbnail", "search reindex"),
            "code": ("0x80070005|8007", "E4012TMO|4012", "ERRCONN104|CONN104", "PG53300X|53300"),
        },
        [
            "the {job} job keeps failing with error {code}",
            "ugh, the {job} job keeps failing with {code} again",
        ],
        lexical=["which job keeps failing?"],
        partial=["which job keeps failing with that error code?"],
        substring=["what was failing with {code_part}?"],
        distractors=[
            "the build keeps failing on the Windows runner",
            "error messages in that library are useless",
        ],
        acks=["Want me to dig into the logs?", "Annoying. Let's look at it together when you're ready."],
    ),
    family(
        "commit_fix",
        {
            "sha": ("9c4e1a7|9c4e", "3f9a7c2|3f9a", "b81d0e4|b81d", "e07c55a|e07c"),
            "component": ("websocket handler", "image resizer", "session cache", "PDF renderer"),
        },
        [
            "commit {sha} fixed the memory leak in the {component}",
            "found it: commit {sha} fixed the memory leak in the {component}",
        ],
        lexical=["which commit fixed the memory leak in the {component}?"],
        partial=["what fixed the memory problem in the {component}?"],
        substring=["what did commit {sha_part} fix?"],
        distractors=[
            "the memory leak is back in a different service, ugh",
            "the {other_component} is slow again",
            "memory usage on the workers looks fine today",
        ],
        acks=["Nice find!", "Great, that one was hard to track down."],
    ),
    family(
        "api_limit",
        {"vendor": ("Stripe", "Twilio", "GitHub", "Mapbox"), "n": ("100", "600", "1,000", "250")},
        [
            "the {vendor} API limit on our plan is {n} requests per minute",
            "checked: the {vendor} API limit on our plan is {n} requests per minute",
        ],
        lexical=["what's the {vendor} API limit?"],
        partial=["what's the rate limit for the {vendor} API?"],
        semantic=["how fast can we call {vendor} before we get throttled?"],
        distractors=["the {other_vendor} API docs are confusing", "our plan renews next month"],
        acks=["Good to know for the batch jobs.", "Noted."],
    ),
    family(
        "oncall",
        {"date": ("November 10th", "October 27th", "December 1st", "November 17th")},
        ["I'm on call the week of {date}", "rota is out, I'm on call the week of {date}"],
        lexical=["when am I on call?"],
        partial=["which week is my on call shift?"],
        semantic=["which week do I carry the pager?"],
        distractors=[
            "being on call this week is exhausting",
            "I'll call you later about the trip",
            "the on-call handbook needs updating",
        ],
        acks=["Noted. Want me to prep a runbook checklist?", "Got it."],
    ),
    family(
        "one_on_one",
        {"manager": ("Priyanka", "Tom", "Sofia", "Mark"), "weekday": WEEKDAYS, "time": TIMES},
        [
            "my 1:1 with {manager} moved to {weekday}s at {time}",
            "heads up: my 1:1 with {manager} moved to {weekday}s at {time}",
        ],
        lexical=["when is my 1:1 with {manager}?"],
        partial=["what day is my 1:1 with {manager} now?"],
        semantic=["when do I meet my boss each week?"],
        distractors=["the sprint planning moved to {other_weekday}", "{manager} is out next week"],
        acks=["Noted.", "Got it."],
    ),
    family(
        "perf_review",
        {"date": DATES},
        ["my performance review is scheduled for {date}", "HR scheduled my performance review for {date}"],
        lexical=["when is my performance review?"],
        partial=["what date is my performance review meeting?"],
        semantic=["when's my yearly evaluation?"],
        distractors=[
            "can you help me write my self-review for the performance cycle?||Sure: list three "
            "outcomes, the impact of each, and one thing you'd do differently.",
            "performance of the search endpoint is bad today",
            "I have to write peer reviews for three people",
        ],
        acks=["Want help preparing a list of wins?", "Noted, let's prep for it."],
    ),
    family(
        "python_pin",
        {
            "repo": ("billing-api", "data-pipelines", "web-frontend-tools", "ml-serving"),
            "ver": ("3.11", "3.10", "3.12", "3.9"),
        },
        ["the {repo} repo is pinned to Python {ver}", "reminder: the {repo} repo is pinned to Python {ver}"],
        lexical=["which Python is the {repo} repo pinned to?"],
        partial=["what python version does {repo} use?"],
        distractors=[
            "Python {other_ver} has some nice typing features",
            "the {other_repo} repo has flaky tests",
        ],
        acks=["Noted.", "Good to know before upgrading anything."],
    ),
    family(
        "backup_cron",
        {"time": ("02:30", "03:15", "01:00", "04:45")},
        ["the backup cron runs at {time} UTC", "moved it: the backup cron runs at {time} UTC now"],
        lexical=["when does the backup cron run?"],
        partial=["what time does the backup job run?"],
        semantic=["what time is the nightly snapshot job scheduled?"],
        distractors=[
            "the backup cron failed last night, disk full",
            "the cron syntax always confuses me",
            "backup of my laptop failed again",
        ],
        acks=["Noted.", "Good, that's outside peak hours."],
    ),
    family(
        "log_bucket",
        {
            "bucket": (
                "acmelogarchive26|logarchive",
                "orbitapplogs|applogs",
                "tealeafrawlogs|rawlogs",
                "nimbusauditlogs|auditlogs",
            )
        },
        ["we ship the logs to the bucket {bucket}", "we now ship the logs to the bucket {bucket}"],
        lexical=["which bucket do we ship the logs to?"],
        partial=["what's the name of the logs bucket?"],
        substring=["which bucket had {bucket_part} in the name?"],
        distractors=[
            "the logs are too noisy, we should cut debug lines",
            "bucket list item: see the northern lights",
        ],
        acks=["Noted.", "Got it."],
    ),
    family(
        "dev_port",
        {"app": ("storybook", "docs", "admin", "checkout"), "port": ("5173", "8080", "3000", "8443")},
        ["the {app} dev server runs on port {port}", "note: the {app} dev server runs on port {port}"],
        lexical=["which port does the {app} dev server run on?"],
        partial=["what port is the {app} running on locally?"],
        semantic=["what localhost address do I open for the {app}?"],
        distractors=["the {other_app} is broken on Safari", "port forwarding on my router is a mess"],
        acks=["Noted.", "Got it."],
    ),
    family(
        "feature_flag",
        {
            "flag": (
                "onbV2RolloutPct|rollout",
                "ffOnboardingBeta7|beta7",
                "newOnbFlowEnabled|flowenabled",
                "guidedSetupCanary|canary",
            )
        },
        [
            "the new onboarding is behind the feature flag {flag}",
            "heads up, the new onboarding ships behind the feature flag {flag}",
        ],
        lexical=["which feature flag is the new onboarding behind?"],
        partial=["what's the flag name for the new onboarding?"],
        substring=["what's the flag with {flag_part} in its name?"],
        distractors=["we should delete old feature flags", "onboarding emails have a low open rate"],
        acks=["Noted.", "Good, safer rollout."],
    ),
    family(
        "vendor_rep",
        {
            "vendor": ("Datadog", "Atlassian", "Cloudflare", "Salesforce"),
            "rep": ("Jenna Park", "Luis Ortega", "Hannah Weiss", "Kofi Mensah"),
        },
        ["our account rep at {vendor} is {rep}", "new account rep at {vendor}: {rep}"],
        lexical=["who is our account rep at {vendor}?"],
        partial=["who's our account manager at {vendor}?"],
        semantic=["who's our contact person at {vendor}?"],
        distractors=["{other_vendor} sent another invoice", "the sales rep kept calling me"],
        acks=["Noted.", "Good to have a name."],
    ),
    family(
        "offsite_budget",
        {"amount": ("12,000 euros", "8,500 dollars", "15k", "9,000 pounds")},
        ["the team offsite budget is {amount}", "finance approved it: the team offsite budget is {amount}"],
        lexical=["what is the offsite budget?"],
        partial=["how big is the budget for the offsite trip?"],
        semantic=["how much can we spend on the team retreat?"],
        distractors=["the offsite agenda is still empty", "team lunch on Friday?"],
        acks=["Nice, that's workable.", "Noted."],
    ),
    family(
        "interview",
        {"company": ("Figma", "Monzo", "Canva", "Datadog", "Klarna"), "date": DATES},
        [
            "I have the final round interview with {company} on {date}",
            "made it to the final round! interview with {company} on {date}",
        ],
        lexical=["when is the final interview with {company}?"],
        partial=["what date is my last interview with {company}?"],
        semantic=["when is the last stage of hiring at {company}?"],
        distractors=[
            "I have a first interview with a startup next week too",
            "I interviewed a candidate today, very strong",
            "{other_company} rejected me, oh well",
        ],
        acks=["Great news! Want to do a mock interview?", "Congrats, let's prepare."],
    ),
    family(
        "pi_ip",
        {"ip": ("192.168.1.42", "192.168.0.77", "10.0.0.23", "192.168.1.108")},
        ["the raspberry pi's IP is {ip}", "so the raspberry pi's IP is {ip} after the router reset"],
        lexical=["what's the IP of the raspberry pi?"],
        partial=["what IP address does the raspberry pi have?"],
        semantic=["what address is the little home server on?"],
        distractors=["raspberry jam recipe from grandma is the best", "the router reset itself again"],
        acks=["Noted. A DHCP reservation would keep it fixed.", "Got it."],
    ),
    family(
        "codename",
        {"codename": ("Kestrel", "Bluefin", "Marmot", "Sundial")},
        [
            "the new mobile app project is codenamed {codename}",
            "it's official, the new mobile app project is codenamed {codename}",
        ],
        lexical=["what's the codename of the new mobile app project?"],
        partial=["what's the internal codename for the mobile app?"],
        semantic=["what do we call the phone app internally?"],
        distractors=["the mobile app crashes on Android 12", "new project kickoff is next week"],
        acks=["Nice name.", "Ha, good one."],
    ),
    family(
        "chart_lib",
        {"lib": ("Recharts", "ECharts", "Plotly", "Vega-Lite", "Chart.js")},
        ["we decided on {lib} for the dashboard charts", "ok we decided on {lib} for the dashboard charts"],
        lexical=["what did we decide on for the dashboard charts?"],
        partial=["which charts library did we decide on for the dashboard?"],
        semantic=["which plotting library did we choose for the dashboard?"],
        distractors=["the dashboard is slow to load", "{other_lib} has a nicer API but a bigger bundle"],
        acks=["Good choice.", "Makes sense."],
    ),
    family(
        "allhands_room",
        {"room": ("4.12", "Atlas", "the big auditorium", "Ballroom B")},
        ["the all-hands is in room {room} this quarter", "fyi the all-hands is in room {room} this quarter"],
        lexical=["which room is the all-hands in?"],
        partial=["what room is the all-hands meeting in this quarter?"],
        semantic=["where's the company meeting held this quarter?"],
        distractors=["the all-hands slides were too long", "meeting room booking is a nightmare"],
        acks=["Noted.", "Got it."],
    ),
    family(
        "laptop",
        {
            "laptop": ("14-inch MacBook Pro", "ThinkPad X1 Carbon", "Dell XPS 13", "Framework 13"),
            "day": WEEKDAYS,
        },
        [
            "IT is shipping me a new laptop, a {laptop}, arriving {day}",
            "IT confirmed they're shipping me a new laptop: {laptop}, arriving {day}",
        ],
        lexical=["what laptop is IT shipping me?"],
        partial=["when is my new laptop arriving and what model?"],
        semantic=["what computer is the helpdesk sending?"],
        distractors=["my laptop fan is so loud", "IT reset my password again"],
        acks=["Nice upgrade.", "Noted."],
    ),
    family(
        "expense_code",
        {"cc": ("TRV4471|4471", "TR2093X|2093", "TRAVEL618|618", "TX55210|5521")},
        ["travel expenses go under cost centre {cc}", "note: travel expenses go under cost centre {cc}"],
        lexical=["which cost centre do travel expenses go under?"],
        partial=["what cost centre do I put travel expenses under?"],
        substring=["what's the {cc_part} code for?"],
        distractors=["expense reports are due Friday", "travel for the conference is approved"],
        acks=["Noted.", "Got it."],
    ),
    family(
        "tracking",
        {
            "store": ("IKEA", "Zalando", "the camera shop", "Decathlon"),
            "tracking": (
                "1Z999AA10123456784|6784",
                "JD014600003828|3828",
                "RR551903227GB|9032",
                "00340434161094042557|2557",
            ),
        },
        [
            "the order from {store} has tracking number {tracking}",
            "shipped! the order from {store} has tracking number {tracking}",
        ],
        lexical=["what's the tracking number for the order from {store}?"],
        partial=["what's the tracking code for the {store} order?"],
        substring=["where's the package ending in {tracking_part}?"],
        distractors=["the {other_store} order arrived damaged", "tracking my sleep with the new watch"],
        acks=["Noted, I'll keep it handy.", "Got it."],
    ),
    family(
        "flaky_test",
        {
            "test": (
                "RefundIdempotencyTest|idempotency",
                "WebhookRetryBackoffTest|backoff",
                "CartMergeConcurrencyTest|concurrency",
                "ExportCsvEncodingTest|encoding",
            )
        },
        [
            "the flaky test in CI is {test}, it times out on cold caches",
            "found the flaky test in CI: {test}, times out on cold caches",
        ],
        lexical=["which test is flaky in CI?"],
        partial=["which CI test keeps timing out?"],
        substring=["was the flaky one the {test_part} test?"],
        distractors=[
            "another test in CI timed out today, different one",
            "CI is green again",
            "flaky wifi at the cafe today",
        ],
        acks=["Nice detective work.", "Want me to suggest a fix?"],
    ),
    family(
        "new_flat",
        {"street": ("Rua das Flores", "Maple Avenue", "Kastanienallee", "Calle Mayor"), "date": DATES},
        [
            "we're moving into the new flat on {street} on {date}",
            "confirmed: we're moving into the new flat on {street} on {date}",
        ],
        lexical=["when are we moving into the new flat?"],
        partial=["what's the address of the new flat?"],
        semantic=["when do we get the keys to our new home?"],
        distractors=[
            "the new flat needs a lot of painting before we move in",
            "{friend} is moving flats too, maybe we can share the van",
            "the new flat downstairs is being renovated",
        ],
        acks=["Exciting! Want a moving checklist?", "Big step, congrats!"],
    ),
    family(
        "wine",
        {
            "city": CITIES,
            "wine": (
                "an Alvarinho from Monção",
                "a cheap Rioja crianza",
                "a Grüner Veltliner",
                "an orange wine from Georgia",
            ),
        },
        [
            "the wine we loved in {city} was {wine}",
            "remember for later: the wine we loved in {city} was {wine}",
        ],
        lexical=["what was the wine we loved in {city}?"],
        partial=["what was that wine from {city} we liked?"],
        semantic=["which bottle did we enjoy on the trip to {city}?"],
        distractors=["wine tasting with {friend} on Saturday", "is {city} worth visiting in winter?"],
        acks=["Noted for the next shop!", "Good memory to keep."],
    ),
    family(
        "coffee_order",
        {"drink": ("a flat white with oat milk", "a double espresso", "an iced oat latte", "a cortado")},
        ["my usual order is {drink}", "for the record my usual order is {drink}"],
        lexical=["what's my usual order?"],
        partial=["what's my usual coffee order?"],
        semantic=["how do I take my coffee?"],
        distractors=["the usual bus was late again", "the cafe changed its order app"],
        acks=["Noted.", "Good taste."],
    ),
    family(
        "bike_lock",
        {"code": ("4-7-1-9", "0825", "3316", "9-0-4-2")},
        ["the bike lock combination is {code}", "changed the bike lock combination to {code}"],
        lexical=["what's the bike lock combination?"],
        partial=["what's the code for the bike lock?"],
        semantic=["what are the numbers for the padlock on my bicycle?"],
        distractors=["my bike got a flat tyre", "the lock on the front door sticks"],
        acks=["Stored.", "Got it."],
    ),
    family(
        "savings",
        {
            "amount": ("300", "450", "200", "600"),
            "goal": ("a new car", "the house deposit", "a trip to Japan", "an emergency fund"),
        },
        ["I'm saving {amount} a month for {goal}", "new plan: I'm saving {amount} a month for {goal}"],
        lexical=["how much am I saving a month?"],
        partial=["how much money am I saving a month?"],
        semantic=["how much do I put aside every month?"],
        distractors=["saving money on groceries is hard", "{friend} bought {other_goal} already"],
        acks=["That adds up fast.", "Nice discipline."],
    ),
    family(
        "shoe_size",
        {"size": ("EU 42", "UK 7", "US 10.5", "EU 39")},
        ["my size in running shoes is {size}", "for future orders: my running shoes size is {size}"],
        lexical=["what size am I in running shoes?"],
        partial=["what shoe size do I wear for running?"],
        semantic=["what trainers fit me when I buy online?"],
        distractors=["running in the rain today was fun", "these shoes give me blisters"],
        acks=["Noted.", "Got it."],
    ),
    family(
        "paint_colour",
        {
            "room": ("bedroom", "hallway", "study", "kitchen"),
            "colour": (
                "Farrow & Ball Hague Blue",
                "a warm sage green",
                "Dulux Timeless",
                "a pale terracotta",
            ),
        },
        [
            "the paint colour for the {room} is {colour}",
            "decided: the paint colour for the {room} is {colour}",
        ],
        lexical=["what's the paint colour for the {room}?"],
        partial=["which paint did we choose for the {room}?"],
        semantic=["which shade did we choose for the walls in the {room}?"],
        distractors=["paint is peeling in the bathroom", "the {other_room} light bulb blew"],
        acks=["Nice choice.", "Sounds cozy."],
    ),
    family(
        "conf_talk",
        {
            "conf": ("PyCon DE", "JSConf EU", "RustFest", "KubeCon", "DjangoCon"),
            "day": ("the Thursday", "day two", "the opening morning", "the last afternoon"),
        },
        [
            "my talk at {conf} got accepted, I'm speaking on {day}",
            "they accepted my talk at {conf}! speaking on {day}",
        ],
        lexical=["when is my talk at {conf}?"],
        partial=["what time is my talk at {conf}?"],
        semantic=["when am I presenting at the conference?"],
        distractors=["{friend} gave a great talk last week", "conference tickets are pricey this year"],
        acks=["Congrats! Want help with the slides?", "Amazing, well done."],
    ),
)

VOCAB: dict[str, tuple[str, ...]] = {
    "city": CITIES,
    "country": (
        "Portugal",
        "Japan",
        "Mexico",
        "Norway",
        "Vietnam",
        "Italy",
        "Morocco",
        "Chile",
        "Greece",
        "Canada",
    ),
    "friend": (
        "Priya",
        "Marco",
        "Jonas",
        "Aiko",
        "Tomás",
        "Léa",
        "Sam",
        "Olu",
        "Noor",
        "Kasia",
        "Diego",
        "Mei",
        "Ravi",
        "Ingrid",
        "Yusuf",
        "Clara",
        "Zoë",
        "Anders",
    ),
    "colleague": ("Martin", "Aisha", "Kevin", "Yuki", "Fatima", "Oscar", "Helena", "Dev", "Rosa", "Luca"),
    "dish": (
        "risotto",
        "shakshuka",
        "pad thai",
        "lasagna",
        "dal",
        "ramen",
        "chili",
        "paella",
        "curry",
        "tacos",
        "gnocchi",
        "bibimbap",
        "moussaka",
        "frittata",
        "pho",
        "falafel",
    ),
    "ingredient": (
        "chickpeas",
        "spinach",
        "leftover rice",
        "feta",
        "mushrooms",
        "sweet potatoes",
        "lentils",
        "tofu",
        "courgettes",
        "eggs",
        "cauliflower",
        "halloumi",
        "black beans",
        "leeks",
    ),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "minutes": ("10", "15", "20", "25", "30", "40", "45"),
    "n": ("2", "3", "4", "5", "6", "8", "10", "12"),
    "price": ("50 euros", "80 dollars", "40 pounds", "100 euros", "30 dollars"),
    "lang": ("Python", "TypeScript", "Go", "Rust", "SQL", "Bash", "Kotlin"),
    "pylib": ("pandas", "requests", "httpx", "pydantic", "numpy", "FastAPI", "SQLAlchemy", "pytest", "click"),
    "tool": ("Docker", "git", "VS Code", "tmux", "Terraform", "GitHub Actions", "Vim", "kubectl", "Poetry"),
    "book": (
        "Project Hail Mary",
        "The Midnight Library",
        "Sapiens",
        "Dune",
        "Educated",
        "The Hobbit",
        "Atomic Habits",
        "Circe",
        "The Martian",
        "Normal People",
    ),
    "show": (
        "Severance",
        "The Bear",
        "Slow Horses",
        "Shōgun",
        "Succession",
        "Only Murders in the Building",
        "Bluey",
        "Blue Planet",
        "The Great British Bake Off",
    ),
    "genre": ("jazz", "lo-fi", "techno", "folk", "classical", "indie rock", "bossa nova", "k-pop"),
    "sport": ("football", "tennis", "climbing", "swimming", "cycling", "yoga", "padel", "basketball"),
    "plant": (
        "basil",
        "tomatoes",
        "monstera",
        "lavender",
        "rosemary",
        "a lemon tree",
        "succulents",
        "chillies",
    ),
    "room": ("bathroom", "spare room", "living room", "balcony", "kitchen"),
    "gadget": ("phone", "laptop", "headphones", "smartwatch", "tablet", "kindle", "router"),
    "store": ("Amazon", "Lidl", "the market", "IKEA", "the corner shop", "Uniqlo"),
    "project": (
        "the migration",
        "the Q4 roadmap",
        "the onboarding revamp",
        "the pricing page",
        "the analytics dashboard",
        "the mobile release",
    ),
    "language": ("Spanish", "French", "Japanese", "German", "Italian", "Portuguese", "Mandarin"),
    "hour": ("7", "8", "9", "6", "10"),
    "distance": ("5k", "10k", "8 km", "3 miles", "15 km"),
    "exercise": ("squats", "push-ups", "deadlifts", "planks", "lunges", "pull-ups"),
    "number": ("12", "37", "120", "250", "1,500", "48"),
}

# --------------------------------------------------------------------------------------------
# Filler: short coherent threads, "U:" for the user and "A:" for the agent, one blank line
# between threads, "# topic" headers. A session strings together prefixes of a few threads.
# `{slot}` names come from VOCAB; `{slot2}` is a second, different value of `slot`.
# --------------------------------------------------------------------------------------------

THREADS = r"""
# cooking
U: what can I make for dinner with {ingredient} and {ingredient2}?
A: A quick {dish} works: {ingredient} and {ingredient2} both hold up well. About {minutes} minutes start to finish.
U: I don't have any fresh herbs though
A: Dried ones are fine, use about a third of the amount and add them earlier so they soften.
U: ok trying it tonight
A: Enjoy! Taste for salt right before serving.

U: how long do I roast {ingredient} for?
A: Around {minutes} minutes at 200°C, turned once halfway. Spread them out so they brown instead of steam.
U: and if I do it in the air fryer?
A: Knock off about a third of the time and shake the basket twice.

U: my {dish} came out really watery, what happened?
A: Usually too much liquid early on or a lid left on. Next time reduce it uncovered for the last {minutes} minutes.
U: can I fix it now?
A: Simmer it uncovered, or stir in a spoon of cornflour mixed with cold water.

U: I want to meal prep for the week, ideas that reheat well?
A: {dish}, a big tray of roasted vegetables with {ingredient}, and a pot of soup. All of them keep 4 days in the fridge.
U: can I freeze the {dish}?
A: Yes, in flat bags so it thaws fast. Use it within three months.

U: what's a good side for {dish}?
A: Something fresh and crunchy: a cucumber salad with lime, or quick-pickled onions.
U: perfect, I have cucumbers
A: Then you're set. Slice them thin and salt them for ten minutes first.

U: how do I stop rice sticking to the pot?
A: Rinse it until the water runs clear, keep the lid on and the heat low, and rest it {minutes} minutes off the heat.

U: is it safe to eat {ingredient} that's been in the fridge {n} days?
A: If it smells and looks fine and was stored covered, usually yes. When in doubt, throw it out.
U: it smells ok
A: Then cook it thoroughly and eat it today.

U: baking bread for the first time this weekend, any advice?
A: Weigh the flour, use water around body temperature, and don't rush the rise. A dark crust means flavour.
U: how do I know when it's done?
A: Tap the bottom: it should sound hollow. Or 95°C inside if you have a thermometer.

# travel
U: thinking about a long weekend in {city}, is it worth it?
A: Definitely. Three days covers the centre, a food market and a day trip. Shoulder season is the sweet spot.
U: where should I stay?
A: Somewhere walkable near the old town; you'll save time and taxi money.
U: any food I shouldn't miss?
A: Go where the locals queue at lunch, and try whatever the city is known for at a market stall.

U: what should I pack for {n} days in {country} in November?
A: Layers, a light waterproof, comfortable shoes that survive rain, and a universal adapter.
U: carry-on only possible?
A: Yes if you plan to do laundry once. Roll the clothes and wear the bulkiest shoes on the plane.

U: train or plane from here to {city}?
A: If the train is under six hours it usually wins door to door, and you can work on it.
U: the train is about five hours
A: Then I'd take the train. Book early for the cheaper fares.

U: my flight got cancelled, what are my rights?
A: In the EU you're owed rebooking or a refund, plus compensation if it's the airline's fault and on short notice.
U: they offered vouchers
A: You can refuse vouchers and ask for a cash refund instead.

U: jet lag always destroys me, tips?
A: Shift your sleep an hour a day before leaving, get morning light at the destination, and skip long naps.

U: is travel insurance worth it for a short trip?
A: For medical cover abroad, yes. Check what your credit card already includes first.

U: any day trips from {city}?
A: Pick one within 90 minutes by train: a coastal town or a hill village usually beats another museum.
U: ok I'll look at trains
A: Buy the return ticket in advance if it's a weekend.

# fitness
U: I want to get back into running, where do I start?
A: Three easy runs a week, walk breaks included. Build to a {distance} without stopping before adding speed.
U: how fast should the easy runs be?
A: Slow enough to hold a conversation. Most people run their easy days too hard.

U: my legs are so sore after leg day
A: Totally normal for a couple of days. Gentle walking, protein, and sleep help more than stretching.
U: should I skip the next workout?
A: Train upper body or go for an easy walk; come back to legs when the soreness fades.

U: how many {exercise} should a beginner do?
A: Start with 3 sets of whatever you can do with good form, then add one or two reps a week.

U: I keep skipping workouts in the morning
A: Lay the clothes out the night before and make the first five minutes trivially easy. Or move them to lunchtime.
U: lunchtime could work actually
A: Then book it in your calendar like a meeting.

U: thinking of trying {sport}, is it good for fitness?
A: Yes, and it's more fun than the gym for a lot of people. Take a beginner class so you learn the basics safely.
U: I'm worried I'll be terrible
A: Everyone is at first. Most beginner groups are friendly.

U: what should I eat before a long run?
A: Something carby and easy 2 to 3 hours before: toast with banana, oats, or rice.

# python
U: how do I read a CSV with {pylib}?
A: With pandas it's `pd.read_csv(path)`; for a plain file the `csv` module's DictReader gives you dicts per row.
U: the file has a weird encoding
A: Pass `encoding="latin-1"` or try `utf-8-sig` if there's a BOM.

U: what's the difference between a list and a tuple?
A: Lists are mutable, tuples aren't. Use a tuple for fixed records and as dict keys.

U: my Python script is really slow on a big file
A: Profile first: `python -m cProfile -s cumtime script.py`. Usually it's one loop doing repeated lookups.
U: it's a nested loop over two lists
A: Turn the inner list into a set or a dict keyed by what you look up; that makes it linear.
U: wow, from minutes to seconds
A: Nice! Data structures beat micro-optimisations every time.

U: how do I mock an HTTP call in pytest?
A: Prefer a fake server or the client's transport hook; with httpx, `MockTransport` lets you return canned responses.
U: I'm using {pylib}
A: Then look for its test transport or run a tiny local server in a fixture.

U: should I use {pylib} or write it myself?
A: Use the library unless it's a few lines. Check it's maintained and the license fits.

U: getting "ModuleNotFoundError" even though I installed it
A: You probably installed it into a different Python. Use `python -m pip install` with the interpreter you run.
U: that was it, two pythons
A: Classic. A virtual environment per project avoids it.

U: how do I type a function that returns either a string or None?
A: `def f() -> str | None:` on Python 3.10+, or `Optional[str]` on older versions.

U: what's a good way to structure a small CLI?
A: One entry point with subcommands, each a small function; click or typer handle the parsing.

# javascript
U: why is my React component rendering twice?
A: In development, StrictMode renders twice on purpose to catch side effects. It won't in production.
U: oh, that explains the double logs
A: Yes. Move side effects into useEffect and they'll behave.

U: how do I debounce an input in {lang}?
A: Wrap the handler so each call resets a timer and only the last call fires after, say, 300 ms.

U: fetch keeps failing with a CORS error
A: The server has to send Access-Control-Allow-Origin for your origin. In dev, proxy the API through your dev server.
U: I don't control the API
A: Then call it from your own backend instead of the browser.

U: npm install takes forever
A: Try a lockfile-based install (`npm ci`) and a cache in CI. pnpm is noticeably faster for big trees.

# git
U: I committed to main by accident, how do I move it to a branch?
A: Create the branch where you are, then move main back one commit. Only do that if you haven't pushed yet.
U: I haven't pushed
A: Then you're fine. Double-check with `git log --oneline` before and after.

U: how do I undo the last commit but keep the changes?
A: `git reset --soft HEAD~1` keeps them staged.

U: merge or rebase for feature branches?
A: Rebase your own branch to keep it current, merge into main. Never rebase shared history.
U: my team argues about this weekly
A: Pick one convention, write it down, and let the tooling enforce it.

U: git says I have a detached HEAD
A: You checked out a commit, not a branch. Create a branch there if you want to keep work: `git switch -c name`.

# sql
U: how do I find duplicate emails in a users table?
A: `select email, count(*) from users group by email having count(*) > 1;`
U: and delete all but the oldest?
A: Keep the row with the smallest id per email and delete the rest; run it as a select first.

U: my query got slow after the table grew
A: Check the plan with EXPLAIN. A missing index on the filter or join column is the usual cause.
U: there's no index on created_at
A: Add one, and if you filter by user too, a composite index on (user_id, created_at).

U: left join vs inner join, remind me?
A: Inner keeps only matching rows; left keeps every row from the left table and fills gaps with NULL.

# devops
U: docker image is 2 GB, how do I shrink it?
A: Use a slim base, a multi-stage build, and clean package caches in the same layer you install them.
U: went down to 300 MB
A: Nice. Add a .dockerignore too so the context stays small.

U: how do I see why a pod keeps restarting?
A: `kubectl describe pod` for events and `kubectl logs --previous` for the crashed container's output.
U: OOMKilled
A: Raise the memory limit a bit and check for a leak; watch usage over a few hours.

U: should we use {tool} for this or is it overkill?
A: If it's one service and two people, keep it simple. Adopt it when the pain is real.

U: our CI takes 25 minutes
A: Cache dependencies, split the test suite across runners, and only run the slow suite on main.
U: caching alone saved 8 minutes
A: Good start. Next look at the slowest tests.

# work
U: can you help me write an email declining a meeting politely?
A: "Thanks for the invite. I can't join this one, but please share notes and I'll follow up on anything for me."
U: make it a bit warmer
A: "Thanks so much for including me! I can't make this one, but I'd love to see the notes and help afterwards."

U: I have too many meetings this week
A: Decline the ones without an agenda, ask for async updates where you're only listening, and block focus time.
U: how do I say no to my manager though?
A: Frame it as trade-offs: "If I join this, X slips. Which matters more?"

U: write me a short status update for {project}
A: "{project}: on track. Done: the main flow. Next: edge cases and review. Risk: waiting on another team."
U: add that {colleague} is helping
A: Added: "{colleague} is pairing on the edge cases."

U: how do I give feedback to a colleague who keeps interrupting?
A: Privately, soon, with one concrete example and how it affected you. Then ask how they see it.

U: need to prepare a 10 minute presentation on {project}
A: Problem, what you did, results, what's next. One idea per slide and a demo if you can.
U: how many slides?
A: Six to eight. Practise it out loud twice.

U: {colleague} is leaving the team, what do I write in the card?
A: "It's been a pleasure working with you. Thanks for all the help. They're lucky to have you!"

U: how do I run a good retro?
A: Timebox it: what went well, what didn't, and two or three actions with owners. Check last time's actions first.

# smalltalk
U: morning! slept terribly
A: Sorry to hear that. Go easy on the coffee after lunch so tonight is better.
U: yeah, too much screen time before bed probably
A: Try putting the phone across the room for a week.

U: it's raining again, so much for the weekend
A: A good excuse for a film marathon or a long lunch somewhere cosy.
U: what should I watch?
A: If you haven't seen {show}, it's a solid pick.

U: any recommendations for something to watch tonight?
A: {show} if you want something gripping, or a comfort rewatch if you're tired.
U: I've seen {show}
A: Then try a documentary, {show2} maybe.

U: feeling a bit unmotivated today
A: Pick one small task you can finish in 15 minutes. Momentum usually follows.

U: what's a good podcast for a long drive?
A: Story-driven ones work best for drives; pick a limited series so you finish it.

U: lol my cat just knocked my coffee over the keyboard
A: Oh no! Unplug it, flip it upside down, and let it dry for a day before trying it.
U: it still works, miracle
A: Lucky! Maybe a lid on the mug from now on.

U: happy Friday!
A: Happy Friday! Any plans for the weekend?
U: hiking with {friend} if the weather holds
A: Sounds great. Pack a layer, it gets cold up high.

# books
U: just finished {book}, what should I read next?
A: If you liked its pace, try {book2}. Different topic, same page-turning feel.
U: I read that one last year
A: Then a short story collection could be a nice change.

U: I keep starting books and not finishing them
A: Allow yourself to drop the ones you don't enjoy. Reading 20 minutes before bed builds a habit.

U: audiobooks count as reading, right?
A: For enjoyment and ideas, absolutely.

# music
U: need some {genre} for focus
A: Try a long instrumental playlist without vocals; lyrics pull attention.
U: any artist to start with?
A: Search the genre plus "essentials" and save what sticks.

U: should I learn guitar or piano?
A: Whichever you'd practise more. Guitar is portable; piano makes theory easier to see.

# home
U: how do I get rid of mould in the {room}?
A: Diluted white vinegar on the spot, dry it thoroughly, and improve ventilation or the mould comes back.
U: it keeps coming back
A: Then the cause is moisture: run the extractor fan longer and keep the door open after showers.

U: want to put up shelves, what screws do I need?
A: Depends on the wall. Plasterboard needs cavity fixings; brick needs plugs and a masonry bit.
U: it's plasterboard
A: Use heavy-duty cavity anchors, or find the studs for anything heavy.

U: my {plant} leaves are turning yellow
A: Most often overwatering. Let the top few centimetres of soil dry out between waterings.
U: I water it every day
A: That's likely it. Try once or twice a week and check the pot drains.

U: best way to clean an oven without harsh chemicals?
A: Baking soda paste overnight, then wipe with vinegar. Messy but effective.

U: the {room} is always cold
A: Check for draughts around windows, add a thick rug, and bleed the radiator.

# money
U: how do I start budgeting?
A: Track a month of spending first, then split it into needs, wants, and savings. Automate the savings transfer.
U: I spend way too much on takeaway
A: Set a weekly amount and pay for it from a separate card.

U: is it better to pay off debt or save?
A: Keep a small emergency fund, then pay off high-interest debt first. Low-interest debt can wait.

U: subscriptions are eating my money
A: List them all, cancel anything unused in the last month, and put the rest on one calendar reminder.

# learning
U: how can I practise {language} every day?
A: Fifteen minutes daily beats an hour on Sunday. Mix an app, a podcast and speaking out loud.
U: speaking is the hardest part
A: Talk to yourself describing what you're doing. Sounds silly, works.

U: explain big O notation simply
A: It's how the work grows as the input grows. O(n) doubles when input doubles; O(n²) quadruples.
U: and O(log n)?
A: Grows very slowly: each step halves the problem, like binary search.

U: what's the best way to memorise vocabulary?
A: Spaced repetition: review just before you'd forget. Anki or any flashcard app with that scheduling.

# tech
U: my {gadget} battery drains really fast
A: Check which app uses the most battery in settings; background location and syncing are the usual culprits.
U: it's the email app
A: Switch it from push to fetch every 30 minutes.

U: should I upgrade my {gadget} or wait?
A: If yours still does what you need and gets updates, wait. New models rarely change daily use much.

U: my wifi is slow in the {room}
A: Move the router higher and more central, or add a mesh point. Walls and mirrors kill signal.
U: it's at the other end of the flat
A: Then a mesh node halfway will make the biggest difference.

U: how do I back up my photos properly?
A: Three copies, two different media, one off-site: the phone, a drive at home, and a cloud backup.

# shopping
U: need a gift for {friend}, they like {sport}
A: Something practical for {sport} they wouldn't buy themselves, or an experience like a class.
U: budget {price}
A: That covers a good piece of gear or a lesson. Add a handwritten card.

U: is it worth buying a good mattress?
A: You spend a third of your life on it, so usually yes. Look for long trial periods.

U: going to {store} later, anything I'm forgetting for the week?
A: Check the basics: milk, bread, fruit, something for lunches, and cleaning stuff if you're low.

# garden
U: when should I plant {plant}?
A: After the last frost for most things, so mid-spring. Start them indoors a few weeks earlier if you like.
U: can I grow them on a balcony?
A: Yes, in a big enough pot with drainage and at least six hours of sun.

U: slugs are eating everything
A: Beer traps, copper tape around pots, and collecting them at dusk. Encourage birds and hedgehogs.

# linux
U: how do I find which process is using port {number}?
A: `lsof -i :PORT` or `ss -ltnp | grep PORT` shows the PID; then `ps -p PID -o cmd`.
U: it's an old dev server I forgot about
A: Stop it with `kill PID`; use `kill -9` only if it ignores the polite signal.

U: what's the quickest way to search all files for a string?
A: `grep -rn "text" .` works everywhere; ripgrep (`rg text`) is much faster and skips ignored files.

U: my disk is full on the server
A: `du -sh /* | sort -h` finds the big directories; drill down from there. Old logs and docker images are usual.
U: 40 GB of docker images
A: `docker system prune` clears unused ones; add `-a` to also drop images no container uses.

U: how do I make a script run every hour?
A: A cron line `0 * * * * /path/to/script.sh`, or a systemd timer if you want logs and retries.

U: tmux or screen?
A: tmux: better defaults, split panes, scriptable. Learn five shortcuts and you're productive.

# regex
U: regex to match an email, roughly?
A: Something like `[^@\s]+@[^@\s]+\.[^@\s]+` catches most; real validation means sending a confirmation mail.

U: why does my regex match too much?
A: Quantifiers are greedy by default. Use `.*?` for the shortest match, or a negated class like `[^"]*`.
U: the lazy one fixed it
A: Nice. A negated class is usually faster too.

# data
U: what chart should I use to compare {n} categories?
A: A horizontal bar chart, sorted by value. Pie charts get unreadable past three or four slices.

U: the mean and median are really different in my data
A: That means skew or outliers. Report the median and look at the tail separately.
U: there are a few huge values
A: Check they're real and not unit errors before deciding what to do with them.

U: how big a sample do I need for an A/B test?
A: It depends on the baseline rate and the smallest effect you care about; a power calculator gives the number per arm.

U: {pylib} groupby is confusing me
A: Think of it as split, apply, combine: group rows by a key, compute something per group, get one row per group back.

# security
U: is it safe to reuse passwords if they're strong?
A: No: one breach exposes every account. Use a password manager and unique passwords.
U: which manager do you recommend?
A: Any reputable one with end-to-end encryption; the best one is the one you'll actually use.

U: got a weird email saying my account is locked
A: Don't click the link. Go to the site directly or call them using a number you already trust.

U: should I turn on two-factor everywhere?
A: Yes, starting with email and banking. An authenticator app beats SMS.

# career
U: how do I ask for a raise?
A: Bring evidence: what you delivered, the impact, and market data. Ask for a specific number and time it after a win.
U: what if they say no?
A: Ask what would need to be true to get there in six months, and get it in writing.

U: should I take a job with more money but a longer commute?
A: Put a price on the commute: hours per week times what your time is worth to you. Often it's not worth it.

U: thinking of switching into {lang} development
A: Build two small real projects and put them online; they say more than a certificate.

U: how do I write a good CV summary?
A: Two lines: what you do, for whom, and one concrete result with a number.
U: mine is five lines
A: Cut it to the strongest two. Recruiters skim.

# productivity
U: I can't focus in the afternoons
A: Schedule shallow work then: email, admin, calls. Keep the morning for the hard thing.

U: how do you manage a long to-do list?
A: Pick three items for today and ignore the rest until they're done. Review the full list once a week.
U: I always pick too many
A: Then pick one must-do and two nice-to-haves.

U: any tips for working from home with kids around?
A: Agree on signals for "do not disturb", do deep work early or late, and accept shorter blocks.

U: notes app recommendations?
A: Plain markdown files in a synced folder last forever; pick an app that stores them that way.

# health
U: how much water should I actually drink?
A: Drink to thirst; pale yellow urine is a good sign. More when it's hot or you exercise.

U: I wake up at 4am every night
A: Keep the room cool and dark, skip alcohol late, and get up at the same time daily, even weekends.
U: even weekends, ugh
A: It's the single biggest lever, sadly.

U: my back hurts after a day at the desk
A: Raise the screen to eye level, feet flat, and stand up every 30 minutes. A short walk helps more than a fancy chair.

U: is it bad to skip breakfast?
A: Not for most people; what you eat over the day matters more than when.

# pets
U: my dog pulls on the lead constantly
A: Stop every time the lead goes tight and move on only when it's slack. Boring, but it works in a couple of weeks.
U: he's very stubborn
A: Use tiny treats at your side when he walks nicely; reward the position you want.

U: how often should a cat see the vet?
A: Once a year for a check-up and vaccines, twice for older cats.

U: is it ok to give a dog {ingredient}?
A: Some human foods are fine in small amounts, others are toxic. Check a vet's list before sharing.

# parenting
U: ideas for a rainy day with a {n} year old?
A: A blanket fort, baking something simple together, or a treasure hunt around the flat.
U: we did the fort last week
A: Then try a cardboard box city: tape, markers, and an afternoon disappears.

U: how do I get my kid to eat vegetables?
A: Keep offering without pressure, let them help cook, and serve one familiar food with each new one.

U: screen time limits, how strict should I be?
A: Focus on what they watch and what it replaces; sleep and outdoor time come first.

# weather
U: is it going to be cold this weekend?
A: I can't check live forecasts, but a weather app with hourly data will tell you. Pack a layer either way.

U: what do I wear for a {distance} run when it's near freezing?
A: Dress as if it's 10 degrees warmer: a base layer, light jacket, gloves, and a hat you can stuff in a pocket.

# cars
U: my tyre pressure light is on
A: Check all four with a gauge when cold and inflate to the number on the driver's door sticker.
U: they all look fine
A: Then one may be slowly leaking, or the sensor needs resetting after inflation.

U: electric or hybrid for the next car?
A: Electric if you can charge at home and most trips are short; hybrid if you do long drives often.

# games
U: any board games for {n} people?
A: Codenames for groups, Ticket to Ride for a relaxed evening, Wingspan if they like strategy.

U: I can't beat this boss in the game I'm playing
A: Learn its pattern before attacking; most bosses telegraph big moves. Level up a bit if all else fails.

# photography
U: how do I take better photos with my phone?
A: Clean the lens, tap to focus, and lower exposure a little. Shoot in soft light near sunrise or sunset.
U: my night photos are blurry
A: Brace the phone on something and use night mode; hold still for the whole capture.

U: what's the rule of thirds?
A: Put the subject on one of the lines that split the frame in thirds, not dead centre.

# social
U: how do I start a conversation at a networking event?
A: Ask what brought them there, then follow up on the answer. People like talking about their work.

U: {friend} hasn't replied in weeks, should I worry?
A: People get busy. A light message without pressure, like sharing something that reminded you of them, works well.
U: good idea, I'll send her a meme
A: Perfect low-stakes opener.

U: planning a dinner party for {n}, menu ideas?
A: One big dish that cooks itself, like {dish}, a simple salad, and a dessert made ahead.
U: one guest is vegan
A: Make the main vegan-friendly or add a hearty vegan side so nobody gets a sad plate.

# writing
U: can you make this sentence shorter: "we are currently in the process of reviewing the proposal"
A: "We're reviewing the proposal."

U: how do I write a good pull request description?
A: What changed, why, how you tested it, and anything the reviewer should look at first.
U: and the title?
A: Imperative and specific: "Add retry to webhook sender", not "fixes".

U: is it "affect" or "effect"?
A: Usually "affect" is the verb and "effect" the noun: the change affects users; the effect was small.

# coffee
U: my espresso tastes sour
A: It's under-extracted: grind finer or pull a bit longer. Bitter means the opposite.

U: is decaf actually caffeine-free?
A: Not fully, but close: a few milligrams per cup instead of eighty or so.
"""


@dataclass(frozen=True)
class Thread:
    topic: str
    exchanges: tuple[tuple[str, str], ...]  # (user text, agent reply)


def parse_threads(text: str) -> tuple[Thread, ...]:
    threads: list[Thread] = []
    topic = ""
    for block in text.strip().split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if lines and lines[0].startswith("# "):
            topic = lines.pop(0)[2:]
        turns = [line[3:] for line in lines]
        if [line[:3] for line in lines] != ["U: ", "A: "] * (len(lines) // 2) or len(lines) % 2:
            raise ValueError(f"thread must alternate 'U: ' and 'A: ' lines: {block!r}")
        threads.append(Thread(topic, tuple(zip(turns[::2], turns[1::2]))))
    return tuple(threads)


THREAD_LIST = parse_threads(THREADS)
WORK_TOPICS = ("python", "javascript", "git", "sql", "devops", "work", "linux", "regex", "data", "writing")
USER_CLOSERS = (
    "thanks!",
    "perfect, thank you",
    "ok cool",
    "that helps, thanks",
    "great",
    "ty",
    "makes sense",
    "nice 👍",
    "will do",
    "ok",
    "awesome, thanks a lot",
    "haha ok",
)
AGENT_CLOSERS = (
    "Anytime!",
    "Glad it helped.",
    "You're welcome!",
    "Happy to help.",
    "Good luck!",
    "👍",
    "Let me know how it goes.",
)
FACT_LEADS = (
    "",
    "",
    "",
    "",
    "oh, before I forget: ",
    "random update: ",
    "ok so ",
    "fyi ",
    "also, ",
    "small thing: ",
)
FACT_TAILS = ("", "", "", "", " 🙂", "!", " 👍")
DISTRACTOR_REPLIES = (
    "Good to know.",
    "Noted.",
    "I hear you.",
    "Thanks for the update.",
    "Got it.",
    "Understood.",
)
QUESTION_WRAPS = (
    "{q}",
    "{q}",
    "{q}",
    "{q}",
    "hey, {q}",
    "remind me, {q}",
    "quick one: {q}",
    "{Q}",
    "{Q}",
    "{q_} again?",
    "{q_}",
)
USER_LEADS = ("", "", "", "so ", "hey, ", "quick question: ", "ok, ", "hmm, ")
WORK_FAMILIES = frozenset(
    {
        "db_choice",
        "deploy_freeze",
        "staging_host",
        "error_code",
        "commit_fix",
        "api_limit",
        "python_pin",
        "backup_cron",
        "log_bucket",
        "dev_port",
        "feature_flag",
        "vendor_rep",
        "offsite_budget",
        "codename",
        "chart_lib",
        "allhands_room",
        "flaky_test",
    }
)


class Slots(dict[str, str]):
    """A format_map mapping that draws missing slots from VOCAB (or a family's values) and keeps them."""

    def __init__(
        self, rng: random.Random, fixed: dict[str, str] | None = None, family: Family | None = None
    ) -> None:
        super().__init__(fixed or {})
        self.rng = rng
        self.family = family

    def __missing__(self, key: str) -> str:
        if key.startswith("other_") and self.family is not None:
            slot = key.removeprefix("other_")
            pool = [v.split("|")[0] for v in self.family.slots[slot]]
        else:
            slot = key.rstrip("0123456789")
            pool = list(VOCAB[slot])
        taken = {self.get(slot), *(v for k, v in self.items() if k.rstrip("0123456789") == slot)}
        value = self.rng.choice([v for v in pool if v not in taken] or pool)
        self[key] = value
        return value


@dataclass
class Fact:
    family: Family
    user: str
    values: dict[str, str]
    text: str
    message_id: str = ""


@dataclass
class Exchange:
    user: str
    text: str
    reply: str
    fact: Fact | None = None


@dataclass
class Session:
    key: str
    users: tuple[str, ...]
    start: datetime
    exchanges: list[Exchange] = field(default_factory=list)


def fill(template: str, slots: Slots) -> str:
    return template.format_map(slots)


def plan_sessions(rng: random.Random) -> list[Session]:
    sessions: list[Session] = []
    for user in USERS:
        starts = sorted(
            START
            + timedelta(
                days=rng.randrange(DAYS),
                hours=rng.choice(user.hours),
                minutes=rng.randrange(60),
                seconds=rng.randrange(60),
            )
            for _ in range(user.sessions)
        )
        sessions += [
            Session(f"{user.platform}-{user.name}-{i:03d}", (user.name,), start)
            for i, start in enumerate(starts, 1)
        ]
    workdays = [d for d in range(DAYS) if (START + timedelta(days=d)).weekday() < 5]
    team_days = sorted(rng.sample(workdays, TEAM_SESSIONS))
    sessions += [
        Session(
            f"slack-team-{i:03d}",
            TEAM,
            START + timedelta(days=d, hours=rng.choice((9, 10, 14, 15)), minutes=rng.randrange(60)),
        )
        for i, d in enumerate(team_days, 1)
    ]
    return sessions


def assign_facts(rng: random.Random) -> list[Fact]:
    load = Counter({user.name: 0 for user in USERS})
    facts: list[Fact] = []
    for fam in FAMILIES:
        # Users of one family get distinct values; a one-value slot (a year) is shared.
        most = min((len(values) for values in fam.slots.values() if len(values) > 1), default=4)
        count = min(rng.choice((2, 3, 3, 3, 4)), most)
        users = sorted(load, key=lambda name: (load[name], rng.random()))[:count]
        drawn = {
            slot: rng.sample(values, count) if len(values) > 1 else [values[0]] * count
            for slot, values in fam.slots.items()
        }
        for i, user in enumerate(users):
            load[user] += 1
            values: dict[str, str] = {}
            for slot, picks in drawn.items():
                value, _, part = picks[i].partition("|")
                values[slot] = value
                if part:
                    values[f"{slot}_part"] = part
            phrasing = rng.randrange(len(fam.facts))
            text = fill(fam.facts[phrasing], Slots(rng, values, fam))
            lead = rng.choice(FACT_LEADS) if phrasing == 0 else ""  # the other phrasings carry their own
            text = lead + (text[0].lower() + text[1:] if lead and text[1:2].islower() else text)
            text += rng.choice(FACT_TAILS)
            facts.append(Fact(fam, user, values, text))
    return facts


def plant(rng: random.Random, sessions: list[Session], facts: list[Fact]) -> None:
    """Put each fact in an early session of its user, and its distractors anywhere in that user's history."""
    cutoff = START + timedelta(days=DAYS * 0.8)
    for fact in facts:
        own = [s for s in sessions if s.users == (fact.user,)]
        team = [s for s in sessions if len(s.users) > 1 and fact.user in s.users]
        early = [
            s
            for s in (team if fact.family.key in WORK_FAMILIES and team and rng.random() < 0.5 else own)
            if s.start < cutoff
        ]
        rng.choice(early).exchanges.append(Exchange(fact.user, fact.text, rng.choice(fact.family.acks), fact))
        anywhere = own + team if fact.family.key in WORK_FAMILIES else own
        for template in fact.family.distractors:
            slots = Slots(rng, dict(fact.values), fact.family)
            text, _, reply = fill(template, slots).partition("||")
            rng.choice(anywhere).exchanges.append(
                Exchange(fact.user, text, reply or rng.choice(DISTRACTOR_REPLIES))
            )


def vary(rng: random.Random, template: str, opener: bool) -> str:
    """Small surface changes so that one thread asked by two people rarely reads identically."""
    if template[1:2].islower() or template[1:2] == " ":  # not a slot, acronym or name in capitals
        if rng.random() < 0.35 or (opener and rng.random() < 0.3):
            template = template[0].lower() + template[1:]
            if opener:
                template = rng.choice(USER_LEADS) + template
    if rng.random() < 0.15 and template.endswith("?"):
        template = template[:-1]
    return template


def converse(rng: random.Random, sessions: list[Session]) -> None:
    """Fill every session with filler threads; planted exchanges go between threads, never inside one."""
    used: dict[str, set[int]] = {user.name: set() for user in USERS}
    work = [i for i, t in enumerate(THREAD_LIST) if t.topic in WORK_TOPICS]
    for session in sorted(sessions, key=lambda s: s.start):
        blocks: list[list[Exchange]] = []
        here: set[int] = set()
        for _ in range(rng.choice((1, 2, 2, 2, 3, 3, 4)) if len(session.users) == 1 else 5):
            speaker = rng.choice(session.users)
            pool = [i for i in (work if len(session.users) > 1 else range(len(THREAD_LIST))) if i not in here]
            fresh = [i for i in pool if i not in used[speaker]] or pool
            index = rng.choice(fresh)
            used[speaker].add(index)
            here.add(index)
            thread = THREAD_LIST[index]
            length = rng.choice(
                (len(thread.exchanges), len(thread.exchanges), rng.randint(1, len(thread.exchanges)))
            )
            slots = Slots(rng)
            block = [
                Exchange(speaker, fill(vary(rng, text, opener=i == 0), slots), fill(reply, slots))
                for i, (text, reply) in enumerate(thread.exchanges[:length])
            ]
            if rng.random() < 0.3:
                block.append(Exchange(speaker, rng.choice(USER_CLOSERS), rng.choice(AGENT_CLOSERS)))
            blocks.append(block)
        for exchange in session.exchanges:
            blocks.insert(rng.randint(0, len(blocks)), [exchange])
        session.exchanges = [exchange for block in blocks for exchange in block]


def render(rng: random.Random, sessions: list[Session]) -> list[dict[str, str]]:
    """Timestamp every message, order all of them by time and number them."""
    timed: list[tuple[datetime, int, dict[str, str], Fact | None]] = []
    for session in sessions:
        clock = session.start
        for exchange in session.exchanges:
            clock += timedelta(seconds=rng.randint(15, 240))
            timed.append(
                (
                    clock,
                    len(timed),
                    {"session": session.key, "user": exchange.user, "role": "user", "content": exchange.text},
                    exchange.fact,
                )
            )
            clock += timedelta(seconds=rng.randint(2, 30))
            timed.append(
                (
                    clock,
                    len(timed),
                    {
                        "session": session.key,
                        "user": exchange.user,
                        "role": "assistant",
                        "content": exchange.reply,
                    },
                    None,
                )
            )
    messages: list[dict[str, str]] = []
    for number, (clock, _, record, fact) in enumerate(sorted(timed, key=lambda row: row[:2]), 1):
        message_id = f"m{number:06d}"
        if fact is not None:
            fact.message_id = message_id
        messages.append({"id": message_id, **record, "ts": clock.strftime("%Y-%m-%dT%H:%M:%SZ")})
    return messages


def ask(rng: random.Random, facts: list[Fact]) -> list[dict[str, object]]:
    """One question per fact, of the kind furthest below its target share; a paraphrase for some."""
    counts = Counter({kind: 0 for kind in KINDS})
    questions: list[dict[str, object]] = []
    for fact in facts:
        available = sorted(
            fact.family.questions, key=lambda kind: (counts[kind] / KIND_TARGETS[kind], KINDS.index(kind))
        )
        kinds = available[:2] if len(available) > 1 and rng.random() < 0.22 else available[:1]
        for kind in kinds:
            counts[kind] += 1
            q = fill(rng.choice(fact.family.questions[kind]), Slots(rng, dict(fact.values), fact.family))
            text = rng.choice(QUESTION_WRAPS).format(q=q, Q=q[0].upper() + q[1:], q_=q.rstrip("?"))
            questions.append(
                {"question": text, "user": fact.user, "answer_ids": [fact.message_id], "kind": kind}
            )
    return questions


def generate(seed: int = SEED) -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    rng = random.Random(seed)
    sessions = plan_sessions(rng)
    facts = assign_facts(rng)
    plant(rng, sessions, facts)
    converse(rng, sessions)
    messages = render(rng, sessions)
    return messages, ask(rng, facts)


def write_jsonl(path: Path, rows: Sequence[dict[str, object]] | Sequence[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------------------------
# --check: are the kinds true of the data? Uses a real FTS5 index (apsw), not the stdlib.
# --------------------------------------------------------------------------------------------

STOP_WORDS = frozenset(
    """a an the is are was were be been being am do does did doing i me my mine we us our you
your it its to of in on at for with from by about as and or but if so what whats which who whom whose where when
how why that this these those there s t m ll re ve d again remind hey quick one say said tell know can could should
would will have has had any now up her his she he they them their much many get""".split()
)


def content_terms(question: str) -> list[str]:
    words = re.findall(r"[^\W_]+", question.lower())
    return list(dict.fromkeys(w for w in words if w not in STOP_WORDS))


def index(messages: list[dict], tokenizers: dict[str, str]) -> apsw.Connection:
    """An in-memory table of the messages with one external-content FTS5 index per tokenizer."""
    import apsw

    db = apsw.Connection(":memory:")
    db.execute("create table m(id text, user text, content text)")
    for name, tokenizer in tokenizers.items():
        db.execute(f"create virtual table {name} using fts5(content, content='m', tokenize='{tokenizer}')")
    with db:
        db.executemany(
            "insert into m(rowid, id, user, content) values (?, ?, ?, ?)",
            [(i, m["id"], m["user"], m["content"]) for i, m in enumerate(messages, 1)],
        )
        for name in tokenizers:
            db.execute(f"insert into {name}({name}) values ('rebuild')")
    return db


def check(messages: list[dict], questions: list[dict]) -> list[str]:
    """Return one line per question whose kind its overlap with the answer does not support."""
    db = index(messages, {"words": "porter unicode61 remove_diacritics 2", "grams": "trigram"})
    rowid = {m["id"]: i for i, m in enumerate(messages, 1)}

    def hits(table: str, term: str, row: int) -> bool:
        return (
            db.execute(
                f"select 1 from {table} where {table} match ? and rowid = ?", (f'"{term}"', row)
            ).fetchone()
            is not None
        )

    problems: list[str] = []
    for q in questions:
        row = rowid[q["answer_ids"][0]]
        answer = messages[row - 1]
        if answer["user"] != q["user"] or answer["role"] != "user":
            problems.append(f"answer is not a message of the asking user: {q}")
        terms = content_terms(q["question"])
        present = [t for t in terms if hits("words", t, row)]
        missing = [t for t in terms if t not in present]
        fragments = [t for t in missing if len(t) >= 3 and hits("grams", t, row)]
        ok = {
            "lexical": bool(terms) and not missing,
            "partial": len(present) >= 2 and bool(missing),
            "semantic": len(present) <= 1 and bool(missing),
            "substring": bool(fragments),
        }[q["kind"]]
        if not ok:
            problems.append(
                f"{q['kind']}: {q['question']!r} present={present} missing={missing} "
                f"fragments={fragments} answer={answer['content']!r}"
            )
    return problems


def baseline(messages: list[dict], questions: list[dict]) -> None:
    """Plain FTS5 bm25 under a few designs: the floor a real search must beat, and what each choice is worth."""
    db = index(messages, {"porter": "porter unicode61 remove_diacritics 2", "plain": "unicode61"})
    designs = {
        "porter OR, own user": ("porter", " OR ", True),
        "porter OR, all users": ("porter", " OR ", False),
        "no stemming OR, own user": ("plain", " OR ", True),
        "porter AND, own user": ("porter", " ", True),
    }
    for design, (table, joiner, scoped) in designs.items():
        ranks: dict[str, list[int]] = {kind: [] for kind in (*KINDS, "all")}
        for q in questions:
            match = joiner.join(f'"{t}"' for t in content_terms(q["question"]))
            found = [
                r[0]
                for r in db.execute(
                    f"select m.id from {table} join m on m.rowid = {table}.rowid where {table} match ? "
                    f"and (m.user = ? or not ?) order by bm25({table}) limit 10",
                    (match, q["user"], scoped),
                )
            ]
            rank = next((i for i, mid in enumerate(found) if mid in q["answer_ids"]), 10)
            ranks[q["kind"]].append(rank)
            ranks["all"].append(rank)
        for kind, values in ranks.items():
            recall = "  ".join(f"@{k}={sum(r < k for r in values) / len(values):.2f}" for k in (1, 5, 10))
            print(f"baseline {design:25} {kind:9} n={len(values):3}  recall {recall}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="verify kinds against an FTS5 index (needs apsw)"
    )
    args = parser.parse_args()
    messages, questions = generate()
    write_jsonl(MESSAGES_FILE, messages)
    write_jsonl(QUESTIONS_FILE, questions)
    kinds = Counter(q["kind"] for q in questions)
    facts = len({q["answer_ids"][0] for q in questions})
    print(
        f"wrote {len(messages)} messages ({MESSAGES_FILE.stat().st_size / 1e6:.2f} MB), {facts} facts, "
        f"{len(questions)} questions: " + ", ".join(f"{k} {kinds[k]}" for k in KINDS)
    )
    if args.check:
        problems = check(messages, questions)
        print("\n".join(problems) or "kinds: all consistent with the FTS5 index")
        baseline(messages, questions)
        raise SystemExit(1 if problems else 0)


if __name__ == "__main__":
    main()
