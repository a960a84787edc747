"""The implicit clue table: one-hop paraphrases hiding an attribute value (docs/original-harness.md §5.6 QueryBuilder).

An implicit query rubric is stated through a clue that maps uniquely to its value without containing it
("Bluetooth" -> "the short-range wireless tech with a blue runic logo", "Cream" -> "a thick, semi-solid
emulsion"). A clue goes beyond a synonym: it uses world knowledge, a problem and its solution, a scenario
or a distinctive physical property. Every clue is a noun phrase, so the verbalizer can wrap it per field
("made of <clue>", "that connects via <clue>", "designed for <clue>").

Coverage: every value of every implicit-eligible field in the synthetic catalog's value pools
(`ecab.catalog.synthetic.PRODUCT_TYPES`), plus common Amazon values. Multi-option values ("Nylon,
Silicone") get a clue when each option has one. A value without a clue is not implicit-eligible in
practice: the rubric stage asks `has_clue` before choosing it.

Rule enforced by the tests: no clue contains its value, nor any >= 3-letter word of its value.
"""
from __future__ import annotations

import random
import re

from ecab.judge.normalize import SEPARATOR, contains_phrase, normalize, options

# One block per field: "Value = clue | another clue". Values are matched after ecab.judge.normalize, so
# "Anti-Glare", "Anti Glare" and "ANTI GLARE" share a line.
_TABLE = {
    "Material": """
ABS = the hard, glossy plastic that toy building bricks are molded from
ABS Plastic = the hard, glossy thermoplastic that toy building bricks are molded from
Acrylic = the clear, shatter-resistant sheet sold under the name Plexiglas
Aluminum = the lightweight silvery metal that soda cans are made of
Aluminum Alloy = a lightweight blend based on the silvery metal soda cans are made of
Bamboo = the fast-growing giant grass that pandas eat
Carbon Fiber = woven graphite strands set in resin, like race-car body panels
Ceramic = kiln-fired clay
Fabric = woven textile cloth
Glass = the brittle transparent material made by melting sand
Goat Hair = soft bristles shorn from a bearded farm animal that gives milk for feta
Hydrogel = a flexible, water-swollen polymer film that self-heals small scratches
Kraft Paper = the brown, unbleached wood-pulp sheet used for grocery bags
Leather = tanned animal hide | cured cowhide
Memory Foam = the slow-rebound cushioning NASA developed for aircraft seats
Mesh Metal = a perforated grid of wire
Metal = solid wrought material from the smelter, nothing molded or woven
Nylon = the synthetic fiber first sold as women's stockings in 1939
Nylon Braided = a woven sheath of the synthetic fiber first sold as stockings in 1939
Paper = thin sheets pressed from wood pulp
Plastic = a cheap, moldable petroleum-based synthetic
Polybutylene Terephthalate = the durable textured plastic that never develops a greasy shine
Polycarbonate = the tough clear plastic used in bulletproof windows
Polyethylene Terephthalate = the clear resin that disposable soda bottles are made of
Protein Leather = a synthetic imitation of animal hide finished with a milk-derived coating
PU Leather = a synthetic imitation of animal hide
PVC = the rigid plastic that white plumbing pipes are made of
Rubber = the bouncy, high-friction material that pencil erasers are made of
Silicone = the soft, heat-proof rubbery polymer used for baking mats
Stainless Steel = the chromium alloy used in cutlery that does not rust
Synthetic = man-made fibers rather than anything natural
TPU = the flexible, rubbery plastic of bendy clear phone covers
Tempered Glass = the heat-treated pane used in car side windows that crumbles into small chunks
Thermoplastic Elastomer = a soft, stretchy plastic that feels like rubber but can be melted and remolded
Thermoplastic Polyurethane = the flexible, rubbery plastic of bendy clear phone covers
Tourmaline = a crystalline gemstone mineral said to emit negative ions
Vegan Leather = a cruelty-free imitation of animal hide
Wood = timber cut from trees
Cotton = the fluffy plant fiber picked from bolls
Polyester = the synthetic fiber that fleece jackets are spun from
Stainless = the chromium alloy used in cutlery that does not rust
""",
    "Item Form": """
Balm = a waxy, solid ointment that melts on contact with skin
Bar = a solid block you lather up with water
Clay = a mineral-rich earth paste that dries on the skin
Crayon = a chunky, wax-based stick you draw on with
Cream = a thick, semi-solid emulsion
Foam = an airy lather that comes out of the pump ready to use
Gel = a clear, jelly-like substance
Liquid = a free-flowing fluid
Lotion = a thin, pourable moisturizing emulsion
Powder = fine dry particles
Stick = a solid twist-up bar
Spray = a fine mist from a pump nozzle
Oil = a slick, water-repelling fluid
Serum = a lightweight, concentrated formula applied drop by drop
""",
    "Skin Type": """
All = every kind of complexion, whatever its quirks
Combination = a complexion that is greasy in the T-zone but dry on the cheeks
Dry = a complexion that feels tight and flaky
Normal = a complexion with no particular issues at all
Oily = a complexion that turns shiny and greasy by midday
Sensitive = a complexion that reddens and stings easily
Acne Prone = a complexion that breaks out easily
""",
    "Hair Type": """
All = every kind of head of hair, whatever its texture
Color Treated = locks that have been dyed at the salon
Curly = locks that naturally form ringlets
Damaged = locks broken by bleach and heat styling
Dry = locks that feel brittle and parched
Fine = thin, baby-soft strands
Oily = locks that look greasy a day after washing
Thick = dense, heavy strands
Straight = locks with no natural bend at all
Wavy = locks with loose S-shaped bends
""",
    "Scent": """
Argan = the nutty oil pressed from kernels of a Moroccan tree
Citrus = zesty oranges and lemons
Coconut = the tropical palm fruit with a hairy brown shell
Fragrance Free = nothing at all, with no added perfume
Lavender = the purple flower Provence is famous for
Mint = the cooling herb that flavors toothpaste
Rose = the classic red Valentine's Day flower
Tea Tree = the medicinal Australian melaleuca leaf
Unscented = nothing at all, with no added perfume
Vanilla = the orchid pod that flavors classic ice cream
Eucalyptus = the leaves koalas eat
""",
    "Finish Type": """
Anti-Glare = a surface treated so lamps and windows do not reflect off it
Brushed = fine parallel scratch lines like a kitchen appliance door
Clear = a fully see-through surface with no tint
Cream = a soft, lotion-like finish between flat and satin
Dewy = a fresh, slightly wet-looking glow
Frosted = a translucent, sandblasted-looking surface like a bathroom window
Glitter = a sparkle of tiny reflective flakes
Glossy = a shiny, mirror-like surface
Matte = a surface that scatters light instead of reflecting it
Metallic = the sheen of polished metal
Natural = the untreated look of the raw material
Painted = a coat of colored paint
Powder Coated = a finish sprayed on as free-flowing dry dust and baked on
Satin = a soft, low sheen between flat and shiny
Sheer = a light, barely-there translucent tint
Shimmer = a subtle sparkle of light-catching particles
Polished = a surface buffed to a high shine
""",
    "Product Benefits": """
Anti-Aging = smoothing of fine lines and wrinkles
Anti-Dandruff = an end to white flakes on dark shirts
Brightening = a more radiant look for a dull complexion
Clarifying = a deep cleanse that strips product buildup
Color Protection = dyed locks that keep their salon shade longer
Fast Drying = a finish that is dry to the touch within minutes
Firming = a tighter, more lifted feel for sagging skin
Frizz Control = smooth strands even on humid days
Hydrating = a deep drink of water for thirsty skin
Long Lasting = wear that holds up all day without touch-ups
Moisturizing = relief for tight, parched skin by locking in water
Soothing = calm for red, irritated skin
Strengthening = protection against breakage and split ends
Transfer Proof = color that does not rub off onto cups or collars
Volume = extra lift and body for flat roots
Volumizing = extra lift and body for flat roots
""",
    "Material Feature": """
10-Free = a formula without the ten most notorious harsh chemicals of nail lacquer
BPA Free = no bisphenol A in the plastic
Cruelty Free = no animal testing at any stage
Natural = ingredients sourced from nature rather than a lab
Non-Toxic = nothing poisonous if a child chews on it
Organic = ingredients farmed without synthetic pesticides
Paraben Free = none of the preservatives often flagged as hormone disruptors
Reusable = the ability to be washed and used again instead of thrown away
Silicone Free = no slippery polymer coatings that build up on the strands
Sulfate Free = a gentle wash without harsh foaming detergents like SLS
Vegan = nothing derived from animals
""",
    "Pattern": """
Camouflage = the blotchy military blend-in design
Cartoon = hand-drawn 2D animation-style graphics
Floral = a print of blossoms and petals
Geometric = repeating angular shapes
Glitter = sparkly embedded flakes
Marble = veined swirls like polished stone countertops
Mesh = an open, net-like weave
Solid = a single uniform color with no prints or designs
Striped = parallel bands of color
Polka Dot = evenly spaced round spots
""",
    "Ink Color": """
Assorted = a mix of several different colors
Black = the color of a moonless night sky
"Black, Blue, Red" = the three classic office colors of night sky, clear daytime sky and stop sign
Blue = the color of a clear daytime sky
Fluorescent Assorted = a mix of glowing highlighter brights
Neon = glowing, highlighter-bright colors
Pastel = soft, chalky light tints
Red = the color of a stop sign
Yellow = the color of a school bus
Green = the color of fresh grass
Purple = the color of ripe eggplant
""",
    "Lens Type": """
Fisheye = an ultra-wide optic with a strongly curved, bulging view
Fixed Focus = an optic with no focusing mechanism at all
Macro = an optic for extreme close-ups of tiny subjects like insects
Prime = an optic with a single focal length and no zoom ring
Standard = an optic whose view roughly matches what the human eye sees
Telephoto = a long optic that brings distant subjects close
Ultra Wide = an optic that takes in an extremely broad scene
Wide Angle = an optic that takes in a broader scene than the eye
Zoom = an optic with an adjustable focal length
""",
    "Processor": """
AMD Ryzen 5 = the mid-range chip line from the main x86 rival of the Pentium's maker
AMD Ryzen 7 = the upper-range chip line from the main x86 rival of the Pentium's maker
Intel Celeron = the budget chip line from the maker of the Pentium
Intel Core i3 = the entry-tier mainstream chip from the maker of the Pentium
Intel Core i5 = the mid-tier mainstream chip from the maker of the Pentium
Intel Core i7 = the upper-tier mainstream chip from the maker of the Pentium
""",
    "RAM": """
1 GB = a single gigabyte of memory
16 GB = as many gigabytes of memory as there are ounces in a pound
32 GB = as many gigabytes of memory as an adult has teeth
4 GB = as many gigabytes of memory as a violin has strings
512 MB = half a gigabyte of memory
8 GB = as many gigabytes of memory as there are bits in a byte
2 GB = a pair of gigabytes of memory
12 GB = a dozen gigabytes of memory
64 GB = as many gigabytes of memory as a chessboard has squares
""",
    "Hard Drive": """
1 TB SSD = a thousand gigabytes of flash storage with no moving parts
128 GB eMMC = an eighth of a terabyte of soldered-on embedded flash
256 GB SSD = a quarter terabyte of flash storage with no moving parts
512 GB SSD = half a terabyte of flash storage with no moving parts
""",
    "Operating System": """
Android = the mobile OS with a green robot mascot | the phone software named after a humanoid robot
"Android, iOS" = both the mobile OS with a green robot mascot and the iPhone's own software
Chrome OS = Google's browser-based laptop software
Mac = Apple's desktop software
Proprietary = the maker's own closed, in-house software
Wear OS = Google's smartwatch software
Windows = Microsoft's desktop software
Windows 10 = the Microsoft desktop release that came right before version 11
Windows 10 Home = the consumer edition of the Microsoft desktop release right before version 11
Windows 11 Home = the consumer edition of Microsoft's 2021 desktop release
Windows 11 Pro = the business edition of Microsoft's 2021 desktop release
"Windows, macOS" = both Microsoft's and Apple's desktop software
"Windows, macOS, Chrome OS" = Microsoft's, Apple's and Google's laptop software alike
"Windows, macOS, Linux" = Microsoft's and Apple's desktop software as well as the open-source one with a penguin mascot
iOS = the iPhone's own software
macOS = Apple's desktop software
Linux = the open-source software with a penguin mascot
""",
    "Connectivity Technology": """
2.4 GHz Wireless = the longer-range cordless band shared with microwave ovens
Bluetooth = the short-range wireless tech with a blue runic logo | the short-range radio standard named after a 10th-century Danish king
Bluetooth 5.3 = the latest generation of the short-range wireless tech with a blue runic logo
"Bluetooth, 2.4 GHz" = both the radio standard named after a Danish king and the band microwave ovens share
"Bluetooth, AUX" = both the radio standard named after a Danish king and a classic headphone-plug cable
"Bluetooth, USB" = both the radio standard named after a Danish king and the universal flat computer port
"Bluetooth, Wi-Fi" = both the radio standard named after a Danish king and the home router's network signal
"Bluetooth, Wi-Fi, USB" = the radio standard named after a Danish king, the home router's signal and the universal computer port
"Bluetooth, Wired" = either the radio standard named after a Danish king or a physical cable
"GPS, Bluetooth" = satellite positioning plus the radio standard named after a Danish king
HDMI = the audio-video cable standard used to hook up TVs and game consoles
"HDMI, DisplayPort" = both the TV-and-console video cable and the PC monitor cable standard
"HDMI, USB-C" = both the TV-and-console video cable and the reversible oval port
"HDMI, VGA" = both the TV-and-console video cable and the old blue 15-pin analog monitor cable
PoE = power and data delivered together over one network cable
Qi Wireless = the induction charging standard named after the Chinese word for life energy
Thunderbolt = the lightning-bolt-logo high-speed port Intel co-developed with Apple
Thunderbolt 3 = the third generation of the lightning-bolt-logo port Intel co-developed with Apple
USB = the universal flat port that thumb drives plug into
USB 3.2 = the newest generation of the universal flat port that thumb drives plug into
"USB, USB-C" = both the classic flat thumb-drive port and its reversible oval successor
USB-C = the reversible oval port newer laptops charge through
Wi-Fi = the same signal your home internet router broadcasts
"Wi-Fi, Bluetooth" = both the home router's network signal and the radio standard named after a Danish king
Wired = a physical cable running all the way to the device
Wireless = a link with no physical cable at all
Ethernet = a wired network cable with a clip-locking plug
NFC = the tap-to-pair radio used for contactless payments
Lightning = the 8-pin plug Apple used before switching to USB-C
""",
    "Connector Type": """
3.5mm Jack = the classic round headphone plug
"3.5mm Jack, USB Type C" = both the classic round headphone plug and the reversible oval port
DisplayPort = the PC monitor cable standard with one angled corner
Dual USB Type C = two of the reversible oval ports newer laptops charge through
HDMI = the audio-video cable standard used to hook up TVs and game consoles
Lightning = the 8-pin plug Apple used on iPhones before its recent switch
MagSafe = Apple's snap-on magnetic attachment system
Micro USB = the small tapered plug older Android phones charged through
USB Type A = the classic flat rectangular plug that only fits one way up
"USB Type A, USB Type C" = both the classic flat rectangular plug and the reversible oval one
USB Type C = the reversible oval plug newer laptops charge through
"USB Type C, HDMI, SD Card" = the reversible oval port plus a TV video output and a camera memory slot
"USB Type C, Lightning" = both the reversible oval plug and Apple's older 8-pin one
"USB Type C, USB Type A" = both the reversible oval plug and the classic flat rectangular one
Wireless = no plug at all, just a cable-free link
USB-C = the reversible oval plug newer laptops charge through
RJ45 = the standard 8-pin modular network plug
""",
    "Wireless Type": """
802.11ac = the Wi-Fi 5 standard
802.11ax = the Wi-Fi 6 standard
"802.11ax, Bluetooth" = the Wi-Fi 6 standard plus the radio standard named after a Danish king
Bluetooth = the short-range wireless tech with a blue runic logo | the short-range radio standard named after a 10th-century Danish king
Radio Frequency = a plain RF link through a small plug-in receiver dongle
""",
    "Power Source": """
AC = household alternating current straight from the outlet
AC Adapter = an external power brick that plugs into the outlet
AC/DC = either household outlet current or a car's direct current
Battery Powered = its own cells rather than a wall cord
Bus Powered = the power of the computer port it is plugged into, with no separate supply
Corded Electric = a cord plugged into a wall outlet
Electric = mains electricity
Manual = nothing but hand power
Not Required = no power at all
Rechargeable Battery = a built-in cell you top up instead of replacing
Solar Powered = sunlight
USB = the universal flat port that thumb drives plug into
""",
    "Mounting Type": """
1/4 Inch Screw = the standard threaded socket found under every camera
Air Vent Mount = clipping onto the slats of a car's ventilation outlet
CD Slot Mount = wedging into the opening where a car stereo takes music discs
Canon EF = the classic bayonet of the biggest Japanese DSLR maker
Canon RF = the mirrorless bayonet of the biggest Japanese DSLR maker
Ceiling Mount = hanging from overhead
Clamp = gripping the edge of a desk with a screw jaw
Clip Mount = clipping on with a spring jaw
Cup Holder Mount = sitting in a car's beverage slot
Dashboard Mount = sitting on top of a car's instrument panel
Desktop = sitting on a desk
Desktop Stand = resting upright on a desk
Floor Standing = resting on the ground on its own
Fujifilm X = the bayonet of the film company famous for its retro-styled mirrorless bodies
Handheld = being held in the hand
Handlebar Mount = attaching to a bicycle's steering bar
Helmet Mount = attaching to protective headgear
Micro Four Thirds = the small-sensor lens system shared by Olympus and Panasonic
Monitor Mount = attaching to a computer screen
Nikon F = the long-lived SLR bayonet of the maker of the D850
Portable = being carried from place to place
Quick Release Plate = a detachable shoe that slides in and locks
Sony E = the mirrorless bayonet of the PlayStation maker's cameras
Strap = a band that wraps around
Tabletop = resting on a table
Tabletop Mount = resting on a table
Tripod Mount = screwing onto a three-legged camera stand
VESA Mount = the standard four-hole pattern on the back of screens
Wall Mount = fixing flat against a vertical surface | being screwed to the drywall
Windshield Mount = sticking to a car's front glass with a suction cup
""",
    "Form Factor": """
2.5 Inch = the notebook-drive size of two and a half inches
3-in-1 Station = a single base that charges a phone, a watch and earbuds at once
APS-C = the crop sensor roughly the size of a classic 35mm film frame's inner section
Ambidextrous = a symmetric shape that suits either hand
Basic Case = a standard one-piece shell that snaps onto the back
Bookshelf = a speaker small enough to sit on a shelf between books
Bumper = a frame that guards only the edges
Clamp = a screw jaw that grips onto an edge | [lamp, desk, monitor] a screw jaw that grips a desk edge
Compact = a space-saving, smaller-than-usual build | [charger, power bank, camera] something small enough to slip into a coat pocket
Cradle = a rest that holds the device snugly in place | [charger, dock] a rest that holds the device upright as it charges
Cube = a small six-sided box shape
Curved = a gently bent screen that wraps around your view
Dock = a hub the laptop connects to at the desk
Ear Hook = curved loops that wrap over the top of each auricle
Flat = a perfectly level panel with no curve at all | [charger, pad] a thin pad that lies level on the table
Folio = a book-style cover that opens like a cover of a novel
Full Frame = a sensor as large as a classic 35mm film negative
Full Size = [keyboard] a layout that keeps the number pad and every key | the standard, unshrunk build rather than a scaled-down travel version
In Ear = buds that sit inside the auditory canal
Magnetic = a holder that snaps on by magnetism
Mirrorless = an interchangeable-lens body with no reflex mirror inside
Monopod Convertible = a three-legged stand that turns into a single-leg pole
On Ear = pads that press against the outer auricles without enclosing them
Open Ear = speakers that sit beside the auditory canal without blocking it
Over Ear = cups that fully enclose each auricle
Pad = a flat mat you lay the phone on
Portable = something light enough to carry from room to room
Right Handed = a sculpted shape for the dominant hand of most people
Rugged Case = a heavy-duty, multi-layer protective shell
Slim = a very thin profile
Stand = an upright holder that props the device at an angle
Tabletop = a base meant to rest on a table
Tenkeyless = a layout without the number pad
Vertical = an upright handshake-style grip
Wallet = a flip cover with slots for cards and cash
Smartphone = a pocketable touchscreen device for making calls and running apps
""",
    "Style": """
Architect = the precise, drafting-table look of a design studio
Blank = pages with no lines at all
Bullet = [notebook, journal, planner] a journaling look built on rapid dotted logging | [camera] a long cylindrical housing shaped like a cartridge | a long, slim, cartridge-like shape
Case Friendly = a size that leaves room for a protective cover
Classic = a timeless, traditional look
College Ruled = narrow lines spaced about 7 mm apart
Colorful = a bright, many-hued look
Compact = a space-saving, smaller-than-usual build
Cute = an adorable, kawaii look
Desktop = a design that sits on a desk
Dome = a rounded half-sphere housing
Dotted = a faint grid of dots instead of lines
Full Coverage = an edge-to-edge design that covers the entire front
Gaming = the RGB-lit look of an e-sports setup
Grid = a page of small squares like graph paper
Heavy Duty = a tough, built-for-abuse design
Industrial = the raw steel-and-rivets look of a factory loft
Long Reach = an extended neck for getting deep into spaces
Low Profile = a very flat, close-to-the-surface design
Mechanical = individual spring switches under each key
Membrane = a quiet rubber-dome layer under the keys
Mild = soft, muted, low-intensity tones
Mini = a shrunken, pocket-sized design
Minimalist = a pared-back look with nothing extra
Modern = a sleek, present-day look
Pan-Tilt = a head that swivels side to side and up and down
Pastel = soft, chalky light tints
Prime Lens = a single fixed focal length with no zoom ring
Privacy = a design that keeps prying eyes out
Professional = a polished, business-grade look
Retro = a look that recalls past decades
Rugged = a tough, outdoorsy build
Rustic = a rough-hewn farmhouse look
Sport = an athletic, active-lifestyle design
Travel = a design meant to be packed in a suitcase
Wide Ruled = broad lines spaced about 9 mm apart for young writers
Zoom Lens = an adjustable focal length for framing from near to far
Vintage = a look that recalls past decades
""",
    "Recommended Uses For Product": """
Art Supplies = a painter's or illustrator's kit
Baby Monitor = watching over an infant asleep in the nursery
Bedside = the nightstand next to your pillow
Bible Journaling = illustrating notes in the margins of scripture
Blending = softening and merging makeup edges
Bullet Journal = a dotted-page planning and habit-tracking notebook
Camping = nights in a tent outdoors
Car = driving around in your vehicle
"Car, Truck, SUV" = every kind of road vehicle, from sedans to pickups
Charging = topping up a battery
"Charging, Data Transfer" = both topping up a battery and syncing files
Contouring = sculpting cheekbones with shadow and light
Cycling = riding a bike
Daily Use = an everyday routine
Data Transfer = syncing and copying files between devices
Diving = exploring underwater with a scuba tank
Drawing = sketching pictures by hand
Everyday Carry = what you keep in your pocket all day
Eyeshadow = coloring the eyelids
Face = the front of the head, from forehead to chin
Face and Neck = the front of the head down to the throat
Facial Mask = a face-covering skincare treatment
Foundation = evening out the complexion with a base layer
Gaming = competitive e-sports matches | long video game sessions
Hair Loss = thinning strands and a receding hairline
Home = use around the house
Home Security = keeping an eye on the house while you are away
Journaling = writing down your days in a diary
Landscape = wide mountain and coastline vistas
Live Streaming = broadcasting yourself to viewers in real time
Macro Photography = extreme close-ups of insects and flowers
Night = use after dark
Office = a nine-to-five desk job
Online Classes = attending lessons remotely over the internet
Outdoor = the open air outside
Party = celebrations with friends
Pet Monitor = watching the cat or dog while you are out
Photo Editing = retouching pictures on a computer
Photography = taking pictures
Portrait = flattering head-and-shoulders shots of people
Reading = getting through a novel
Running = jogging and marathon training
Salon = hair and beauty studios
Scalp Care = the skin under your hair
School = the classroom
Shower = the bathroom while washing up
Sports = athletic games and workouts
Streaming = watching shows and movies over the internet
Studio = a recording or photo workspace
Study = hitting the books before exams
Studying = hitting the books before exams
Surveillance = monitoring an area around the clock
Travel = trips away from home
Truck = driving a pickup
Video Conferencing = virtual meetings with remote coworkers
Vlogging = filming yourself for a video diary channel
Wildlife = animals in their natural habitat
Work = the day job
Window = the transparent glass panes that let you see outside
""",
    "Special Feature": """
100W Power Delivery = enough fast-charge wattage to feed a big laptop at a full hundred watts
360 Degree Rotation = turning a full circle on its axis
4K HDMI = ultra-high-definition video output to a TV
9H Surface Hardness = the top grade on the pencil scratch scale
Acid Free = a formula that will not yellow or eat into paper over decades
Active Noise Cancellation = electronically erasing surrounding sound with inverted sound waves
Activity Tracker = counting steps and workouts throughout the day
Adaptive Sync = refresh timing that follows the graphics card to stop tearing
Adjustable DPI = switchable cursor sensitivity
Adjustable Height = raising and lowering to suit the user
Anti Glare = a surface treated so lamps and windows do not reflect off it
Anti Glare Screen = a display treated so lamps and windows do not reflect off it
Anti-Fingerprint = an oleophobic coating that shrugs off smudges
Anti-Yellowing = a clear back that stays crystal clear instead of ambering with age
Auto Clamping = arms that close around the phone by themselves
Auto Focus = sharpening the image by itself
Autofocus = sharpening the image by itself
Backlit = illuminated keys for typing in the dark
Backlit Keyboard = illuminated keys for typing in the dark
Ball Head = a spherical joint that swivels in every direction
Blood Oxygen = SpO2 readings like a fingertip pulse oximeter
Blue Light Filter = a tint that blocks the screen wavelengths blamed for sleeplessness
Bluetooth Remote = a little cordless clicker for taking the shot from afar
Braided = a woven sheath around the cable
Bubble Free = an application that leaves no trapped air pockets
Built-in Cables = cords attached so nothing else is needed
Built-in Microphone = an integrated mic for calls
Built-in Speakers = integrated sound output
Built-in Staple Remover = an integrated claw for pulling out bent fasteners
Card Holder = slots to carry an ID and a credit line's plastic
Case Friendly = a fit that leaves room for a protective cover
Ceramic = heating plates made of fired clay
Ceramides = the lipids that rebuild the skin barrier
Chip Resistant = lacquer that does not flake off the nails
Color Night Vision = footage in full hues even after dark
Color Safe = a formula that keeps dyed hair's shade
Comfort Grip = a cushioned hold for long writing sessions
Compact = a size small enough to slip into a pocket
Cool Shot = a blast of cold air to set a style
Data Sync = syncing files while connected
Deep Bass = booming low-end sound
Dense Bristles = tightly packed brush hairs
Diffuser Included = an attachment for drying curls without frizz
Dimmable = brightness that can be turned down
Drawer = a sliding compartment for storage
Drop Protection = surviving falls onto hard floors
Dual Screen = two displays side by side
Dual-Sided = two usable faces
Easy to Clean = a surface that wipes down in seconds
Ergonomic = a shape designed to reduce wrist strain
Ergonomic Handle = a grip shaped to reduce hand strain
Ethernet Port = a wired network jack
Extendable Arm = a reach that stretches out further
Eye Care = a display tuned to reduce visual fatigue
Eye Caring = light tuned to reduce visual fatigue
Fast Charging = a battery top-up in a fraction of the usual time
Fingerprint Reader = unlocking with a touch of your fingertip
Flicker-Free = a backlight that does not pulse
Foldable = folding down flat for storage
Foldable Handle = a grip that folds away
Foldable Plug = prongs that fold away for packing
GPS = satellite positioning
GaN = rapid charging powered by gallium nitride semiconductors
HDR = a wider range between the brightest highlights and darkest shadows
Hardware Encryption = an onboard chip that scrambles stored data
Heart Rate Monitor = measuring your pulse
Heavy Duty = a build tough enough for abuse
Height Adjustable = raising and lowering to suit the user
Hot Swappable = switches that can be pulled and replaced without soldering
Hyaluronic Acid = the molecule that holds a thousand times its weight in water
Image Stabilization = steadying the shot against shaky hands
Ionic = negatively charged particles that fight frizz
Jam Free = a mechanism that never gets stuck mid-job
Kickstand = a built-in prop that stands it up for videos
LED Display = a lit digital readout
LED Indicator = a small status light
LED Lights = glowing diodes for illumination
Lay Flat = a binding that opens to a full 180 degrees
Lightweight = barely any weight to carry
Long Lasting = wear that holds up all day
Long Wearing = wear that holds up all day
Low Light Correction = clear images in dim rooms
MagSafe Compatible = working with Apple's snap-on magnetic accessories
Magnetic = snapping on by magnetism
Manual Focus = a ring you turn by hand to sharpen the image
Memory Function = remembering your last settings
Motion Sensor = detecting movement
Multi-Device = switching between a laptop, tablet and phone at the press of a key
Multiple Compartments = several separate sections for sorting
Night Vision = seeing in the dark with infrared
No Bleed = ink that does not soak through the page
Non-Comedogenic = a formula that will not clog pores
Numbered Pages = a printed count in the corner of every sheet
One-Hand Operation = working it with a single thumb while the other arm is busy
Overheat Protection = a safety cut-off when it gets too hot
Pass-Through Charging = refilling itself while it feeds your phone
Password Protection = locking access behind a secret code
Pedometer = counting your steps
Peel Off = a mask that lifts away in one sheet once it dries
Plug and Play = working the moment it is connected, with no drivers
Pocket = a small pouch to tuck things in
Power Delivery = the USB fast-charge protocol that negotiates higher wattage
Privacy = a tint that blacks out the view from the side
Privacy Cover = a slide-over shutter for the lens
Programmable Buttons = extra keys you can assign your own shortcuts
Quick Dry = a coat that sets in seconds
Quiet Keys = typing that hardly makes a sound
Raised Edges = a lip that keeps the screen off the table
Rechargeable = a power cell you can refill instead of replacing
Refillable = a body you reload instead of throwing away
Retinol = the vitamin A derivative dermatologists prescribe for wrinkles
Ring Light = a circular lamp for even facial lighting
Rotating = a part that swivels around
SD Card Reader = a slot for camera memory
SPF = protection against the burning rays of the sun
SPF 30 = sun protection rated thirty
Salon Quality = results like a trained stylist's
Scratch Resistant = withstanding scrapes without showing permanent marks
Shock Resistant = absorbing impacts from knocks and falls
Shockproof = protection from the shock of being dropped
Silent Click = buttons that make no audible sound
Sleep Tracker = monitoring how well you rest at night
Sliding Drawer = a compartment that glides out
Slim = a very thin profile
Slim Fit = a very thin, close-fitting profile
Slow Motion = high-frame-rate footage you can play back stretched out
Smear Guard = ink that will not smudge under a highlighter
Smear Proof = ink that stays put when touched
Smudge Proof = makeup that stays put when touched
Soft Bristles = gentle brush hairs
Spotlight = a focused beam of light
Spring Powered = a coiled mechanism doing the work
Stereo Pairing = linking two speakers for left and right sound
Sweatproof = holding up to perspiration during workouts
Tangle Free = a cord that does not knot
Thick Paper = heavyweight sheets that hold up to markers
Time Lapse = compressing hours of footage into seconds
Timer = a countdown that shuts it off
Touch Control = tapping and swiping instead of pressing buttons
Touchscreen = a display you operate with your fingers
Travel = a size meant for packing in a suitcase
Travel Case = a protective carrying pouch
Two-Way Audio = talking back through it
USB Charging Port = a spot to top up a phone
Voice Control = commands spoken out loud
Water Resistant = surviving splashes and rain
Waterproof = surviving a dunk underwater
Weather Sealed = gaskets that keep out rain and dust
Wireless Charging = topping up just by setting it on a pad
Wireless Charging Case = an earbud holder that tops up on a pad
Wireless Charging Compatible = working with pad chargers without removal
pH Balanced = a formula matching the skin's natural acidity
Shock-Absorbent = cushioning against the jolt of being dropped
Anti-Glare = a surface treated so lamps and windows do not reflect off it
""",
}


# A clue may start with "[word, word]": it then fits only products whose entity phrase or title contains
# one of those words ("Full Size = [keyboard] a layout that keeps the number pad" must not describe a
# tripod). Every value with such a clue also has an unrestricted one (a test checks it), so a value that
# has a clue keeps one for every product.
_SCOPE = re.compile(r"^\[([^\]]+)\]\s*")


def _parse_line(line: str) -> tuple[str, list[tuple[str, tuple[str, ...]]]]:
    value, _, rest = line.partition(" = ")
    value = value.strip().strip('"')
    found = []
    for part in rest.split("|"):
        part = part.strip()
        m = _SCOPE.match(part)
        scope = tuple(normalize(w) for w in m.group(1).split(",") if w.strip()) if m else ()
        text = part[m.end():].strip() if m else part
        if text:
            found.append((text, scope))
    return value, found


def _build() -> tuple[dict[str, dict[str, list[str]]], dict[tuple[str, str], tuple[str, ...]]]:
    table: dict[str, dict[str, list[str]]] = {}
    scopes: dict[tuple[str, str], tuple[str, ...]] = {}
    for field, block in _TABLE.items():
        rows = table.setdefault(field, {})
        for line in block.strip().splitlines():
            if not line.strip():
                continue
            value, found = _parse_line(line)
            if not value or not found:
                raise ValueError(f"clues.py: field {field!r}: malformed clue line {line!r}")
            for text, scope in found:
                rows.setdefault(normalize(value), []).append(text)
                if scope:
                    scopes[(field, text)] = scope
    return table, scopes


CLUES, CLUE_SCOPES = _build()   # field -> normalized value -> clues; (field, clue) -> product words


def _bare(field: str | None) -> str:
    field = field or ""
    return field.split(".", 1)[1] if field.startswith("details.") else field


def fits(field: str | None, clue: str, context: str | None) -> bool:
    """Whether a clue suits the product described by `context` (entity phrase + title); without a
    context every clue counts (the rubric stage only asks whether some clue exists)."""
    scope = CLUE_SCOPES.get((_bare(field), clue))
    if not scope or context is None:
        return True
    text = normalize(context)
    return any(contains_phrase(text, w) or contains_phrase(text, w + "s") for w in scope)


def clues_for(field: str | None, value: object, context: str | None = None) -> list[str]:
    """Every clue for the value of that field that fits the product ([] when none). A multi-option value
    without its own line gets one composed clue when every option has a clue."""
    bare = _bare(field)
    rows = CLUES.get(bare)
    if not rows or value is None:
        return []
    key = normalize(value)
    if key in rows:
        return [c for c in rows[key] if fits(bare, c, context)]
    parts = options(key) if SEPARATOR in key else []
    firsts = [next((c for c in rows.get(p, []) if fits(bare, c, context)), None) for p in parts]
    if len(parts) >= 2 and all(firsts):
        return [" and ".join(firsts) if len(firsts) == 2 else ", ".join(firsts[:-1]) + " and " + firsts[-1]]
    return []


def has_clue(field: str | None, value: object, context: str | None = None) -> bool:
    """True when `clue_for` can hide this value (the rubric stage picks implicit rubrics only then)."""
    return bool(clues_for(field, value, context))


def clue_for(field: str | None, value: object, rng: random.Random, avoid: tuple[str, ...] = (),
             context: str | None = None) -> str | None:
    """One clue for the value that fits the product (chosen with rng when several exist), or None.
    Clues that mention a word of `avoid` (values hidden elsewhere in the task) are skipped when another
    clue is left."""
    found = clues_for(field, value, context)
    if avoid:
        clean = [c for c in found if not any(_mentions(c, a) for a in avoid)]
        found = clean or found
    return rng.choice(found) if found else None


def _mentions(text: str, value: str) -> bool:
    v = normalize(value)
    return len(v) > 2 and contains_phrase(normalize(text), v)
