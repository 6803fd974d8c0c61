"""The item prompts' categories, as data: each a closed, listable set whose members (with their aliases) a rule can
find in an answer (``darling.core.items``). Written for this project; MIT, like the code.

``FIRST_CATEGORIES`` are issue 49's 26, split once by a seeded shuffle into 18 training and 8 held-out categories;
``HELDOUT_CATEGORIES`` are issue 61's, all held out, so that the held-out set has enough categories for an interval
over prompts to mean something while the training prompts (and every run trained on them) stay as they were.
"""

from __future__ import annotations

Categories = dict[str, tuple[str, tuple]]

# key -> (the phrase the prompt names it by, its members; a member is "Name" or ("Name", "alias", ...)). Names match
# in any case ("the earth"), except those that are also common words in lower case: "may", "march", "cancer".
FIRST_CATEGORIES: Categories = {
    "planet": (
        "a planet of the solar system",
        ("Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"),
    ),
    "month": (
        "a month of the year",
        (
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            ("September", "Sept"),
            "October",
            "November",
            "December",
        ),
    ),
    "weekday": ("a day of the week", ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")),
    "zodiac": (
        "a sign of the zodiac",
        (
            "Aries",
            "Taurus",
            "Gemini",
            "Cancer",
            "Leo",
            "Virgo",
            "Libra",
            "Scorpio",
            "Sagittarius",
            "Capricorn",
            "Aquarius",
            "Pisces",
        ),
    ),
    "continent": (
        "a continent",
        ("Africa", "Antarctica", "Asia", ("Australia", "Oceania"), "Europe", "North America", "South America"),
    ),
    "ocean": ("an ocean", ("Pacific", "Atlantic", "Indian Ocean", "Arctic", ("Southern Ocean", "Antarctic Ocean"))),
    "rainbow": ("a colour of the rainbow", ("red", "orange", "yellow", "green", "blue", "indigo", "violet")),
    "noble-gas": ("a noble gas", ("helium", "neon", "argon", "krypton", "xenon", "radon", "oganesson")),
    "olympian": (
        "one of the Olympian gods",
        (
            "Zeus",
            "Hera",
            "Poseidon",
            "Demeter",
            "Athena",
            "Apollo",
            "Artemis",
            "Ares",
            "Aphrodite",
            "Hephaestus",
            "Hermes",
            ("Dionysus", "Dionysos"),
            "Hestia",
        ),
    ),
    "beatle": (
        "a member of the Beatles",
        (
            ("John Lennon", "Lennon"),
            ("Paul McCartney", "McCartney"),
            ("George Harrison", "Harrison"),
            ("Ringo Starr", "Ringo"),
        ),
    ),
    "great-lake": (
        "one of the Great Lakes of North America",
        ("Lake Superior", "Lake Michigan", "Lake Huron", "Lake Erie", "Lake Ontario"),
    ),
    "chess-piece": ("a chess piece", ("king", "queen", ("rook", "castle"), "bishop", "knight", "pawn")),
    "sense": ("one of the five senses", (("sight", "vision"), "hearing", "smell", "taste", "touch")),
    "season": ("a season of the year", ("spring", "summer", ("autumn", "fall"), "winter")),
    "south-america": (
        "a country in South America",
        (
            "Argentina",
            "Bolivia",
            "Brazil",
            "Chile",
            "Colombia",
            "Ecuador",
            "Guyana",
            "Paraguay",
            "Peru",
            "Suriname",
            "Uruguay",
            "Venezuela",
        ),
    ),
    "wonder": (
        "one of the Seven Wonders of the Ancient World",
        (
            ("Great Pyramid of Giza", "Great Pyramid", "Pyramid of Giza", "Pyramids of Giza"),
            ("Hanging Gardens of Babylon", "Hanging Gardens"),
            ("Statue of Zeus",),
            ("Temple of Artemis",),
            ("Mausoleum at Halicarnassus", "Mausoleum"),
            ("Colossus of Rhodes", "Colossus"),
            ("Lighthouse of Alexandria", "Pharos"),
        ),
    ),
    "alkali-metal": (
        "an alkali metal",
        ("lithium", "sodium", "potassium", "rubidium", ("caesium", "cesium"), "francium"),
    ),
    "card-suit": (
        "a suit of playing cards",
        (("hearts", "heart"), ("diamonds", "diamond"), ("clubs", "club"), ("spades", "spade")),
    ),
    "pacific-state": ("a US state on the Pacific coast", ("California", "Oregon", "Washington", "Alaska", "Hawaii")),
    "nordic": ("a Nordic country", ("Denmark", "Finland", "Iceland", "Norway", "Sweden")),
    "g7": (
        "a member country of the G7",
        (
            "Canada",
            "France",
            "Germany",
            "Italy",
            "Japan",
            ("United Kingdom", "UK", "Britain"),
            ("United States", "USA", "America"),
        ),
    ),
    "galilean-moon": ("one of Jupiter's Galilean moons", ("Io", "Europa", "Ganymede", "Callisto")),
    "tragedy": (
        "a tragedy by Shakespeare",
        (
            "Hamlet",
            "Macbeth",
            ("King Lear", "Lear"),
            "Othello",
            "Romeo and Juliet",
            "Julius Caesar",
            "Antony and Cleopatra",
            "Coriolanus",
            "Titus Andronicus",
        ),
    ),
    "hogwarts": ("a house of Hogwarts", ("Gryffindor", "Hufflepuff", "Ravenclaw", "Slytherin")),
    "light-element": (
        "one of the first ten chemical elements",
        ("hydrogen", "helium", "lithium", "beryllium", "boron", "carbon", "nitrogen", "oxygen", "fluorine", "neon"),
    ),
    "polygon": (
        "a polygon with three to eight sides",
        (
            "triangle",
            ("square", "quadrilateral", "rectangle"),
            "pentagon",
            "hexagon",
            ("heptagon", "septagon"),
            "octagon",
        ),
    ),
}


# Held out only (issue 61): other kinds of closed sets (letters, layers, fictional groups, regions, bones), so that a
# policy's diversity on them says something about categories no run trained on.
HELDOUT_CATEGORIES: Categories = {
    "greek-letter": (
        "a letter of the Greek alphabet",
        (
            "alpha",
            "beta",
            "gamma",
            "delta",
            "epsilon",
            "zeta",
            "eta",
            "theta",
            "iota",
            "kappa",
            "lambda",
            "mu",
            "nu",
            "xi",
            "omicron",
            "pi",
            "rho",
            "sigma",
            "tau",
            "upsilon",
            "phi",
            "chi",
            "psi",
            "omega",
        ),
    ),
    "cardinal-direction": ("a cardinal direction of the compass", ("north", "south", "east", "west")),
    "state-of-matter": ("a classical state of matter", ("solid", "liquid", ("gas", "gaseous"), "plasma")),
    "platonic-solid": (
        "a Platonic solid",
        ("tetrahedron", ("cube", "hexahedron"), "octahedron", "dodecahedron", "icosahedron"),
    ),
    "atmosphere-layer": (
        "a layer of the Earth's atmosphere",
        ("troposphere", "stratosphere", "mesosphere", "thermosphere", "exosphere"),
    ),
    "rock-type": ("one of the three main types of rock", ("igneous", "sedimentary", "metamorphic")),
    "ninja-turtle": (
        "one of the Teenage Mutant Ninja Turtles",
        (("Leonardo", "Leo"), ("Michelangelo", "Mikey"), ("Donatello", "Donnie"), ("Raphael", "Raph")),
    ),
    "musketeer": ("one of the Three Musketeers", ("Athos", "Porthos", "Aramis", ("d'Artagnan", "D'Artagnan"))),
    "gospel": ("one of the four Gospels of the New Testament", ("Matthew", "Mark", "Luke", "John")),
    "basic-taste": ("one of the five basic tastes", ("sweet", "sour", ("salty", "saltiness"), "bitter", "umami")),
    "deadly-sin": (
        "one of the seven deadly sins",
        ("pride", ("greed", "avarice"), "lust", "envy", "gluttony", ("wrath", "anger"), "sloth"),
    ),
    "baltic-state": ("one of the Baltic states", ("Estonia", "Latvia", "Lithuania")),
    "uk-nation": ("a country of the United Kingdom", ("England", "Scotland", "Wales", "Northern Ireland")),
    "benelux": ("a Benelux country", ("Belgium", ("Netherlands", "Holland"), "Luxembourg")),
    "canadian-province": (
        "a province of Canada",
        (
            "Ontario",
            "Quebec",
            "British Columbia",
            "Alberta",
            "Manitoba",
            "Saskatchewan",
            "Nova Scotia",
            "New Brunswick",
            ("Newfoundland and Labrador", "Newfoundland"),
            "Prince Edward Island",
        ),
    ),
    "australian-state": (
        "a state of Australia",
        ("New South Wales", "Victoria", "Queensland", "South Australia", "Western Australia", "Tasmania"),
    ),
    "central-america": (
        "a country in Central America",
        ("Belize", "Costa Rica", "El Salvador", "Guatemala", "Honduras", "Nicaragua", "Panama"),
    ),
    "rushmore": (
        "a president carved on Mount Rushmore",
        (
            ("George Washington", "Washington"),
            ("Thomas Jefferson", "Jefferson"),
            ("Theodore Roosevelt", "Teddy Roosevelt", "Roosevelt"),
            ("Abraham Lincoln", "Lincoln"),
        ),
    ),
    "simpsons": ("a member of the Simpson family in The Simpsons", ("Homer", "Marge", "Bart", "Lisa", "Maggie")),
    "halogen": ("a halogen", ("fluorine", "chlorine", "bromine", "iodine", "astatine", "tennessine")),
    "us-branch": (
        "a branch of the United States federal government",
        ("legislative", "executive", ("judicial", "judiciary")),
    ),
    "ear-bone": (
        "one of the three bones of the middle ear",
        (("malleus", "hammer"), ("incus", "anvil"), ("stapes", "stirrup")),
    ),
}
